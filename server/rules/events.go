package rules

import (
	"encoding/json"
	"slices"

	"github.com/sluicehq/sluice/store"
)

// Rule event types (docs/webhooks.md), published in the transaction of
// the write they announce.
const (
	EventRuleCreated    = "rule.created"
	EventRuleUpdated    = "rule.updated"
	EventRuleDeleted    = "rule.deleted"
	EventRuleRolledBack = "rule.rolledBack"
	EventRulesApplied   = "rules.applied"
)

// RuleEvent is the data of a rule.created, rule.updated, rule.deleted or
// rule.rolledBack event: the rule as the write left it (as it was before
// a delete, at the version the delete gave it), who wrote it and why.
type RuleEvent struct {
	Rule   EventRule `json:"rule"`
	Actor  string    `json:"actor" example:"alice"`
	Reason string    `json:"reason" example:"Black Friday cap"`
}

// EventRule is a rule in an event: its id and version, and its content as
// apply takes it.
type EventRule struct {
	ID      int64 `json:"id" example:"42"`
	Version int64 `json:"version" example:"3"`
	Content
}

// maxAppliedNames bounds the names each list of a rules.applied event
// carries: an apply of 100,000 rules announces its counts, not every name.
const maxAppliedNames = 100

// AppliedEvent is the data of a rules.applied event: what an apply or
// import changed (the names in each list, up to 100, and how many in
// all), who applied it and why.
type AppliedEvent struct {
	Created      []string `json:"created" example:"orders-qps"`
	Updated      []string `json:"updated"`
	Deleted      []string `json:"deleted"`
	CreatedCount int      `json:"createdCount" example:"1"`
	UpdatedCount int      `json:"updatedCount" example:"0"`
	DeletedCount int      `json:"deletedCount" example:"0"`
	Actor        string   `json:"actor" example:"ci-deploy"`
	Reason       string   `json:"reason" example:"deploy 1f2e3d"`
}

// announce publishes in the write's transaction the event of type kind on
// r, whose content is c: it is delivered if, and only if, the write
// commits.
func (tx *Tx) announce(kind string, r *Rule, c Content, who Actor) error {
	data, err := json.Marshal(RuleEvent{Rule: EventRule{ID: r.ID, Version: r.Version, Content: c}, Actor: who.Name, Reason: who.Reason})
	if err != nil {
		return err
	}
	_, err = tx.Publish(store.Announcement{Type: kind, Data: data, Apps: []string{r.App}, Resources: []string{r.Resource}})
	return err
}

// announceApply publishes in the write's transaction the rules.applied
// event of plan, which wrote want and deleted pruned, unless it changed
// nothing.
func (tx *Tx) announceApply(plan ApplyPlan, want, pruned []Rule, who Actor) error {
	if len(plan.Created)+len(plan.Updated)+len(plan.Deleted) == 0 {
		return nil
	}
	var apps, resources []string
	for _, r := range slices.Concat(want, pruned) {
		apps, resources = append(apps, r.App), append(resources, r.Resource)
	}
	names := func(items []PlanItem) []string {
		out := []string{}
		for _, it := range items[:min(len(items), maxAppliedNames)] {
			out = append(out, it.Name)
		}
		return out
	}
	updated := make([]PlanItem, len(plan.Updated))
	for i, u := range plan.Updated {
		updated[i] = u.PlanItem
	}
	data, err := json.Marshal(AppliedEvent{
		Created: names(plan.Created), Updated: names(updated), Deleted: names(plan.Deleted),
		CreatedCount: len(plan.Created), UpdatedCount: len(plan.Updated), DeletedCount: len(plan.Deleted),
		Actor: who.Name, Reason: who.Reason,
	})
	if err != nil {
		return err
	}
	_, err = tx.Publish(store.Announcement{Type: EventRulesApplied, Data: data, Apps: apps, Resources: resources})
	return err
}
