package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/engine/wire"
)

// cachePath is the file that keeps the app's last good rule set: the
// snapshot as the server sent it, revision included.
func (c *Client) cachePath() string {
	return filepath.Join(c.cfg.CacheDir, "rules-"+c.cfg.App+".json")
}

// saveCache writes body, a snapshot just loaded, to the cache.
func (c *Client) saveCache(body []byte) error {
	if c.cfg.CacheDir == "" {
		return nil
	}
	return writeAtomically(c.cfg.CacheDir, filepath.Base(c.cachePath()), body)
}

// writeAtomically writes body to the file name in dir: to a temporary
// file first, renamed over the old one, so that a crash leaves the old
// content or the new, never half of it.
func writeAtomically(dir, name string, body []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".sluice-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(body)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// loadCache loads the cached rule set, if there is one: the rules in
// force until the server answers.
func (c *Client) loadCache() error {
	if c.cfg.CacheDir == "" {
		return nil
	}
	body, err := os.ReadFile(c.cachePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rule cache: %w", err)
	}
	var snap wire.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		return fmt.Errorf("rule cache %s: %w", c.cachePath(), err)
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if err := c.load(snap); err != nil {
		return fmt.Errorf("rule cache %s: %w", c.cachePath(), err)
	}
	c.pollETag = revisionETag(snap.Revision)
	c.inForce(snap.Revision, true)
	c.logger.Info("sluice remote: cached rules loaded", "app", c.cfg.App, "revision", snap.Revision, "rules", len(snap.Rules))
	return nil
}

// unsentPattern matches the files that keep the minutes a closed Client
// could not report, one per instance: "unsent-<instance id>.json".
const unsentPattern = "unsent-*.json"

// unsent is what an unsent file keeps: who counted the minutes, and them.
type unsent struct {
	Instance wire.ReportInstance `json:"instance"`
	Minutes  []wire.ReportMinute `json:"minutes"`
}

// saveUnsent keeps the minutes Close could not report in the cache
// directory, so that the next Client on it reports them: a restart while
// the server is away loses nothing counted. The minutes keep the identity
// that counted them, so that a retry still counts once.
func (c *Client) saveUnsent(minutes []wire.ReportMinute) error {
	if c.cfg.CacheDir == "" || len(minutes) == 0 {
		return nil
	}
	body, err := json.Marshal(unsent{Instance: c.identity(), Minutes: minutes})
	if err != nil {
		return err
	}
	return writeAtomically(c.cfg.CacheDir, "unsent-"+c.cfg.InstanceID+".json", body)
}

// loadUnsent reads the minutes earlier Clients on the cache directory
// could not report, by file.
func (c *Client) loadUnsent() (map[string]unsent, error) {
	if c.cfg.CacheDir == "" {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(c.cfg.CacheDir, unsentPattern))
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	found := make(map[string]unsent, len(paths))
	var errs []error
	for _, path := range paths {
		body, err := os.ReadFile(path)
		var u unsent
		if err == nil {
			err = json.Unmarshal(body, &u)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("unsent minutes %s: %w", path, err))
			continue
		}
		found[path] = u
	}
	return found, errors.Join(errs...)
}
