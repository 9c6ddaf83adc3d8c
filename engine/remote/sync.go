package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/engine/wire"
)

// pollGrace is how much longer than PollWait a snapshot request may take
// before it is abandoned: the server holds it up to PollWait, then
// answers.
const pollGrace = 15 * time.Second

// maxSnapshotBytes bounds a snapshot's body.
const maxSnapshotBytes = 64 << 20

// syncLoop long-polls the rule snapshot until ctx ends, backing off after
// failures, and after a "not modified" that came before its wait was up
// (a server shutting down, or one that does not hold requests), so that
// such a server is not asked again and again at once.
func (c *Client) syncLoop(ctx context.Context) {
	b := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		asked := c.cfg.Now()
		notModified, err := c.sync(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			c.fail(err)
		case notModified && c.cfg.Now().Sub(asked) < c.cfg.PollWait/2:
		default:
			b.reset()
			continue
		}
		if !sleep(ctx, b.next()) {
			return
		}
	}
}

// sync asks for the snapshot once and loads it if it changed; it reports
// whether the server answered "not modified".
func (c *Client) sync(ctx context.Context) (notModified bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.PollWait+pollGrace)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.snapshotURL, nil)
	if err != nil {
		return false, err
	}
	c.authorize(req)
	c.loadMu.Lock()
	etag := c.pollETag
	c.loadMu.Unlock()
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("rule snapshot: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		c.synced(etag)
		return true, nil
	case http.StatusOK:
	default:
		return false, fmt.Errorf("rule snapshot: %w", answerError(resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSnapshotBytes+1))
	if err != nil {
		return false, fmt.Errorf("rule snapshot: %w", err)
	}
	if len(body) > maxSnapshotBytes {
		return false, fmt.Errorf("rule snapshot: larger than %d bytes", maxSnapshotBytes)
	}
	return false, c.apply(body)
}

// synced records that the server answered that the rules are still
// those of etag.
func (c *Client) synced(etag string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSync, c.credentialsRefused = c.cfg.Now(), false
	if c.hasRules && etag == revisionETag(c.revision) {
		c.fromCache = false
	}
}

// apply loads the snapshot body as the new rule set and keeps it in the
// cache. A set that does not decode or load is refused whole: the rules
// in force stay, and the snapshot is not asked for again until the
// revision moves.
func (c *Client) apply(body []byte) error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	var snap wire.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		return fmt.Errorf("rule snapshot: %w", err)
	}
	c.pollETag = revisionETag(snap.Revision)
	c.mu.Lock()
	c.lastSync = c.cfg.Now()
	c.mu.Unlock()
	if err := c.load(snap); err != nil {
		return fmt.Errorf("rule snapshot revision %d refused, the rules in force stay: %w", snap.Revision, err)
	}
	c.inForce(snap.Revision, false)
	c.logger.Info("sluice remote: rules loaded", "app", c.cfg.App, "revision", snap.Revision, "rules", len(snap.Rules))
	if err := c.saveCache(body); err != nil {
		return fmt.Errorf("rule cache: %w", err)
	}
	return nil
}

// loadEngine decodes snap's rules and loads them in place of every rule the
// engine holds. The caller holds loadMu.
func (c *Client) loadEngine(snap wire.Snapshot) error {
	set, err := wire.DecodeRules(snap.Rules)
	if err != nil {
		return err
	}
	// Every resource holding rules now is replaced too: left out of the
	// set, it is left with none.
	held := map[string]bool{}
	for _, r := range c.engine.FlowRules() {
		held[r.Resource] = true
	}
	for _, r := range c.engine.CircuitBreakerRules() {
		held[r.Resource] = true
	}
	for _, r := range c.engine.HotspotRules() {
		held[r.Resource] = true
	}
	for _, r := range c.engine.AuthorityRules() {
		held[r.Resource] = true
	}
	for _, r := range c.engine.AdaptiveConcurrencyRules() {
		held[r.Resource] = true
	}
	for _, name := range set.Resources {
		delete(held, name)
	}
	set.Resources = append(set.Resources, slices.Sorted(maps.Keys(held))...)
	return c.engine.LoadResourceRules(set)
}

// inForce records that the rules of revision are loaded.
func (c *Client) inForce(revision int64, fromCache bool) {
	c.mu.Lock()
	c.revision, c.hasRules, c.fromCache = revision, true, fromCache
	c.mu.Unlock()
	c.readyOnce.Do(func() { close(c.ready) })
}

// revisionETag is the ETag of a snapshot revision.
func revisionETag(revision int64) string { return `"` + strconv.FormatInt(revision, 10) + `"` }

// CredentialsError is the server refusing the client's token (401) or
// what its role or scope allows (403): trying again changes nothing until
// the token does. State.CredentialsRefused tells it.
type CredentialsError struct {
	Status int
	Err    error
}

// Error says what the server answered.
func (e *CredentialsError) Error() string { return e.Err.Error() + " (check the token: Config.Token)" }

// Unwrap returns the server's answer.
func (e *CredentialsError) Unwrap() error { return e.Err }

// answerError describes a failed answer of the server by its status and
// the message of its error envelope; a CredentialsError for 401 and 403.
func answerError(resp *http.Response) error {
	err := describeAnswer(resp)
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return &CredentialsError{Status: resp.StatusCode, Err: err}
	}
	return err
}

// describeAnswer is answerError's message.
func describeAnswer(resp *http.Response) error {
	var envelope struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(body, &envelope) == nil && envelope.Error.Message != "" {
		return fmt.Errorf("server answered %s: %s: %s", resp.Status, envelope.Error.Code, envelope.Error.Message)
	}
	return fmt.Errorf("server answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
}
