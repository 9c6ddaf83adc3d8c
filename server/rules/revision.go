package rules

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/store"
)

// revisionFormat is the version of storedRevision that revisions are
// written in. Migration 00005 turned the rows of before it (the rule as the
// API showed it) into format 1.
const revisionFormat = 1

// storedRevision is the content of a revision row: the rule's envelope and
// its kind's engine rule, the spec, as the rules table keeps them. It is
// the domain's own format, so that rollback reads a version back without
// the API's decoder, and a change of the API's shape leaves history alone.
type storedRevision struct {
	Format      int             `json:"format"`
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	App         string          `json:"app,omitempty"` // absent in revisions written before rules had an app
	Resource    string          `json:"resource"`
	Enabled     bool            `json:"enabled"`
	Mode        string          `json:"mode"`
	Description string          `json:"description"`
	Spec        json.RawMessage `json:"spec"`
	Version     int64           `json:"version"`
	CreatedAt   time.Time       `json:"createdAt" format:"date-time"`
	UpdatedAt   time.Time       `json:"updatedAt" format:"date-time"`
}

// revise records r, as it is after the write, as a revision.
func revise(tx *Tx, r *Rule, action string, who Actor) error {
	rev, err := revision(r, action, who)
	if err != nil {
		return err
	}
	return tx.AddRevision(&rev)
}

// revision is the history row of r as it is now.
func revision(r *Rule, action string, who Actor) (store.RuleRevision, error) {
	spec, err := r.SpecJSON()
	if err != nil {
		return store.RuleRevision{}, err
	}
	content, err := json.Marshal(storedRevision{
		Format: revisionFormat, ID: r.ID, Name: r.Name, Kind: r.Kind, App: r.App, Resource: r.Resource,
		Enabled: r.Enabled, Mode: r.Mode, Description: r.Description, Spec: spec,
		Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	})
	if err != nil {
		return store.RuleRevision{}, err
	}
	return store.RuleRevision{
		RuleID: r.ID, Version: r.Version, Action: action, Content: string(content),
		Actor: who.Name, Reason: who.Reason,
	}, nil
}

// fromRevision is the rule as revision row rev kept it.
func fromRevision(rev store.RuleRevision) (Rule, error) {
	var stored storedRevision
	if err := json.Unmarshal([]byte(rev.Content), &stored); err != nil {
		return Rule{}, fmt.Errorf("rule %d revision %d: %w", rev.RuleID, rev.Version, err)
	}
	if stored.Format != revisionFormat {
		return Rule{}, fmt.Errorf("rule %d revision %d: format %d, not %d", rev.RuleID, rev.Version, stored.Format, revisionFormat)
	}
	return fromStore(store.Rule{
		ID: stored.ID, Name: stored.Name, Kind: stored.Kind, App: stored.App, Resource: stored.Resource,
		Enabled: stored.Enabled, Mode: stored.Mode, Description: stored.Description, Spec: string(stored.Spec),
		Version: stored.Version, CreatedAt: stored.CreatedAt, UpdatedAt: stored.UpdatedAt,
	})
}
