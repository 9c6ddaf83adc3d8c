package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// DefaultClusterTimeout bounds an instance's exchange with the cluster
// count, which goes through the server to its Redis: past it, the cluster
// rules fall back.
const DefaultClusterTimeout = 100 * time.Millisecond

// maxLeasesBytes bounds the answer to an exchange: a lease is under 100
// bytes, and the server answers at most 1,000.
const maxLeasesBytes = 1 << 20

// serverCount is the cluster count an instance leases from: the server's,
// reached through POST /cluster/exchange, so that instances hold no Redis
// credentials.
type serverCount struct {
	c   *Client
	url string
}

// Exchange posts x and reads the leases back; an answer other than 200
// (409: the server has no Redis; 503: its Redis is away) is an error, and
// the engine's cluster rules fall back.
func (s serverCount) Exchange(ctx context.Context, x engine.ClusterExchange) ([]engine.ClusterLease, error) {
	body, err := json.Marshal(wire.ExchangeOf(x))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	s.c.authorize(req)
	resp, err := s.c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cluster exchange: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cluster exchange: %w", answerError(resp))
	}
	var answer wire.ClusterAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxLeasesBytes)).Decode(&answer); err != nil {
		return nil, fmt.Errorf("cluster exchange: the answer: %w", err)
	}
	return answer.Engine(), nil
}
