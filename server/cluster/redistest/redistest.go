package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// readyTimeout bounds how long a started server may take to answer PING.
const readyTimeout = 10 * time.Second

// Server is a running throwaway redis-server.
type Server struct {
	t      testing.TB
	bin    string
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts a redis-server for t on a free loopback port and waits
// until it answers PING; it is killed when t ends. A machine without
// redis-server fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		bin = "/usr/bin/redis-server"
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("redis-server is not installed (not on PATH nor at %s): run make redis", bin)
		}
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	t.Cleanup(s.Kill)
	s.start()
	return s
}

// URL is the server's address as go-redis parses it: database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://%s/0", s.Addr()) }

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Kill kills the server with SIGKILL, as a crash would, and waits until it
// is gone. Killing a server that is not running does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts a new, empty server on the same port (after killing the
// running one, if any) and waits until it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	logPath := filepath.Join(s.dir, "redis.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatalf("redis log: %v", err)
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "")
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, logFile, logFile
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(readyTimeout)
	for {
		err := s.ping()
		if err == nil {
			return
		}
		select {
		case <-exited:
			s.cmd = nil
			out, _ := os.ReadFile(logPath)
			s.t.Fatalf("redis-server exited before answering PING: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			s.t.Fatalf("redis-server did not answer PING in %v: %v\n%s", readyTimeout, err, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ping sends PING in Redis's inline protocol and expects +PONG.
func (s *Server) ping() error {
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
