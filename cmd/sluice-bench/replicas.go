package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/store/pgtest"
)

// The replicas' figure (issue #16): how long a rule written on one of
// three sluice replicas on one PostgreSQL takes to reach the other two.

// targetPropagationP99 is the target of the replicas' figure.
const targetPropagationP99 = time.Second

// replicas starts a throwaway PostgreSQL and three sluice processes on it,
// changes a rule on the first changes times and, for each change, times
// how long the other two take to answer the new revision from GET
// /api/v1/rules/snapshot, long-polled with If-None-Match, from just
// before the write.
func replicas(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	binary := fs.String("sluice", "./sluice", "the sluice binary (go build -o sluice ./cmd/sluice)")
	changes := fs.Int("changes", 50, "rule changes to time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pg, err := pgtest.StartDurable()
	if err != nil {
		return err
	}
	defer func() { _ = pg.Stop() }()
	db, err := pg.CreateDatabase(ctx, "sluice")
	if err != nil {
		return err
	}
	logs, err := os.MkdirTemp("", "sluice-bench-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(logs)
	token := randomHex(24)
	nodes, err := startReplicas(ctx, *binary, db, token, logs, 3)
	defer stopReplicas(nodes)
	if err != nil {
		return err
	}
	writer, err := newAPI(nodes[0].base, token)
	if err != nil {
		return err
	}
	var rule struct{ ID int64 }
	if err := writer.do(http.MethodPost, "/rules", map[string]any{
		"name": "bench-propagation", "kind": "flow", "resource": "bench-propagation", "threshold": 1000,
	}, &rule); err != nil {
		return err
	}
	var each, all []time.Duration
	for c := 1; c <= *changes && ctx.Err() == nil; c++ {
		before, err := nodes[0].revision(token, 0)
		if err != nil {
			return err
		}
		start := time.Now()
		took := make([]time.Duration, len(nodes)-1)
		errs := make([]error, len(nodes)-1)
		var wg sync.WaitGroup
		for i, n := range nodes[1:] {
			wg.Go(func() {
				_, errs[i] = n.revision(token, before)
				took[i] = time.Since(start)
			})
		}
		if err := writer.do(http.MethodPatch, fmt.Sprintf("/rules/%d", rule.ID), map[string]any{"threshold": 1000 + c}, nil); err != nil {
			return err
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		each = append(each, took...)
		all = append(all, slices.Max(took))
	}
	fmt.Printf("rule change on replica 1 → new revision on replicas 2 and 3, %d changes, PostgreSQL %s, load %s\n", len(all), pg.Version(), loadAverage())
	fmt.Printf("  each replica:  %s\n", summary(each))
	fmt.Printf("  both replicas: %s (target p99 ≤ %v)\n", summary(all), targetPropagationP99)
	return ctx.Err()
}

// replicaNode is a sluice process.
type replicaNode struct {
	cmd    *exec.Cmd
	exited chan struct{}
	base   string
}

// startReplicas starts n sluice processes on db, one after the other (the
// first applies the migrations and creates the admin), each on a free
// loopback port with its log in dir, and waits until each answers.
func startReplicas(ctx context.Context, binary, db, token, dir string, n int) ([]*replicaNode, error) {
	var nodes []*replicaNode
	client := &http.Client{Timeout: time.Second}
	for i := range n {
		port, err := freeLoopbackPort()
		if err != nil {
			return nodes, err
		}
		logPath := filepath.Join(dir, fmt.Sprintf("replica%d.log", i+1))
		logFile, err := os.Create(logPath)
		if err != nil {
			return nodes, err
		}
		cmd := exec.CommandContext(ctx, binary, "--addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "--db", db)
		cmd.Env = append(os.Environ(), "SLUICE_BOOTSTRAP_TOKEN="+token)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		err = cmd.Start()
		logFile.Close()
		if err != nil {
			return nodes, err
		}
		node := &replicaNode{cmd: cmd, exited: make(chan struct{}), base: fmt.Sprintf("http://127.0.0.1:%d", port)}
		go func() {
			_ = cmd.Wait()
			close(node.exited)
		}()
		nodes = append(nodes, node)
		for deadline := time.Now().Add(30 * time.Second); ; {
			if resp, err := client.Get(node.base + "/api/v1/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-node.exited:
				log, _ := os.ReadFile(logPath)
				return nodes, fmt.Errorf("replica %d exited:\n%s", i+1, log)
			default:
			}
			if time.Now().After(deadline) {
				return nodes, fmt.Errorf("replica %d does not answer after 30 s", i+1)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes, nil
}

func stopReplicas(nodes []*replicaNode) {
	for _, n := range nodes {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, n := range nodes {
		<-n.exited
	}
}

// revision long-polls the node's rule snapshot until its revision is past
// after, and returns it.
func (n *replicaNode) revision(token string, after int64) (int64, error) {
	client := &http.Client{Timeout: 15 * time.Second}
	for {
		req, err := http.NewRequest(http.MethodGet, n.base+"/api/v1/rules/snapshot?wait=10s", nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("If-None-Match", strconv.Quote(strconv.FormatInt(after, 10)))
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		var snap struct{ Revision int64 }
		err = json.NewDecoder(resp.Body).Decode(&snap)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotModified:
			return 0, fmt.Errorf("%s: revision %d unchanged after 10 s", n.base, after)
		case resp.StatusCode != http.StatusOK || err != nil:
			return 0, fmt.Errorf("%s: snapshot: %d %v", n.base, resp.StatusCode, err)
		case snap.Revision > after:
			return snap.Revision, nil
		}
	}
}

// freeLoopbackPort returns a loopback port nothing listens on now.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
