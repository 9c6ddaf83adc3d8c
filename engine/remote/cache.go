package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// cachePath is the file that keeps the app's last good rule set: the
// snapshot as the server sent it, revision included.
func (c *Client) cachePath() string {
	return filepath.Join(c.cfg.CacheDir, "rules-"+c.cfg.App+".json")
}

// saveCache writes body, a snapshot just loaded, to the cache: to a
// temporary file first, renamed over the old one, so that a crash leaves
// the old set or the new one, never half of one.
func (c *Client) saveCache(body []byte) error {
	if c.cfg.CacheDir == "" {
		return nil
	}
	if err := os.MkdirAll(c.cfg.CacheDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.cfg.CacheDir, ".rules-*.tmp")
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
		err = os.Rename(tmp.Name(), c.cachePath())
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
	var snap snapshot
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
