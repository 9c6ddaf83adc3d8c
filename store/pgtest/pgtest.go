package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Server is a running throwaway PostgreSQL server.
type Server struct {
	dir     string
	bin     string // /usr/lib/postgresql/<major>/bin
	port    int
	cmd     *exec.Cmd
	exited  chan struct{}
	log     bytes.Buffer
	admin   *sql.DB
	created atomic.Int64
	// template is the database NewDatabase copies, "" for an empty one.
	template string
	// copies holds databases copied from the template ahead of the tests
	// that will want them (UseTemplate), so that a test does not wait for
	// its copy; a test that finds none makes its own.
	copies chan string
	// drops takes the databases of ended tests to the dropper, so that a
	// test does not wait for its database's drop (a checkpoint).
	drops chan string
	// stopping ends the goroutines that make copies and drop databases;
	// Stop cancels it and waits for them (wg).
	stopping context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	// mu guards dropErrs, the drops that failed, which Stop returns.
	mu       sync.Mutex
	dropErrs []error
}

// Start initialises a cluster in a new temporary directory and starts its
// server on a free loopback port, without fsync (a test's data need not
// survive a crash). Stop removes both.
func Start() (*Server, error) { return start(false) }

// StartForTest is Start for one test: it fails t if the server does not
// start, and stops it when t ends.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// StartDurable is Start with PostgreSQL's default durability (fsync and
// synchronous commits), for benchmarks whose figures must be a real
// server's.
func StartDurable() (*Server, error) { return start(true) }

func start(durable bool) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, exited: make(chan struct{}), drops: make(chan string, 1000)}
	s.stopping, s.stop = context.WithCancel(context.Background())
	if err := s.start(bin, durable); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	s.wg.Add(1)
	go s.dropper()
	return s, nil
}

// CreateDatabase creates an empty database called name and returns its
// URL.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.dsn(name), nil
}

// Version is the server's major version, such as "15".
func (s *Server) Version() string { return filepath.Base(filepath.Dir(s.bin)) }

func (s *Server) start(bin string, durable bool) error {
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.Dir, initdb.SysProcAttr = s.dir, &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if s.port, err = freePort(); err != nil {
		return err
	}
	args := []string{"-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.dir, "-c", "max_connections=200"}
	if !durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	s.cmd.Dir, s.cmd.SysProcAttr = s.dir, &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	s.admin, err = sql.Open("pgx", s.dsn("postgres"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.admin.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited: %s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 30 s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// binDir finds the directory of Debian's PostgreSQL server binaries, the
// newest version installed.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server in /usr/lib/postgresql/*/bin: run make postgres (apt-get install postgresql)")
}

// serverCredential is whom the server runs as: nil (the caller) unless the
// caller is root, which PostgreSQL refuses; then the postgres user, made
// if missing.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "postgres").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("useradd postgres: %w\n%s", err, out)
		}
		if u, err = user.Lookup("postgres"); err != nil {
			return nil, err
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) dsn(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, database)
}

// UseTemplate makes a database, lets prepare fill it (apply the
// migrations, say), and has NewDatabase copy it from then on: a copy takes
// a fraction of what the migrations take. A copy or two are made ahead,
// while tests run. Call it before the first NewDatabase.
func (s *Server) UseTemplate(prepare func(url string) error) error {
	const name = "sluice_template"
	if _, err := s.admin.Exec("CREATE DATABASE " + name); err != nil {
		return fmt.Errorf("create the template: %w", err)
	}
	if err := prepare(s.dsn(name)); err != nil {
		return fmt.Errorf("prepare the template: %w", err)
	}
	// A template must have no connection when it is copied.
	if _, err := s.admin.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'"); err != nil {
		return err
	}
	s.template = name
	s.copies = make(chan string, 2)
	s.wg.Add(1)
	go s.copier()
	return nil
}

// copier keeps copies full of databases copied from the template until
// Stop.
func (s *Server) copier() {
	defer s.wg.Done()
	for {
		name, err := s.create(s.stopping)
		if err != nil {
			// Stop's doing, or a failure that the next test's own copy
			// will meet and report.
			return
		}
		select {
		case s.copies <- name:
		case <-s.stopping.Done():
			return
		}
	}
}

// dropper drops the databases sent to drops until Stop, which removes
// the rest with the cluster.
func (s *Server) dropper() {
	defer s.wg.Done()
	for {
		select {
		case name := <-s.drops:
			if _, err := s.admin.ExecContext(s.stopping, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil && s.stopping.Err() == nil {
				s.mu.Lock()
				s.dropErrs = append(s.dropErrs, fmt.Errorf("drop database %s: %w", name, err))
				s.mu.Unlock()
			}
		case <-s.stopping.Done():
			return
		}
	}
}

// create makes a new database, empty or a copy of the template, and
// returns its name.
func (s *Server) create(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test_%d", s.created.Add(1))
	create := "CREATE DATABASE " + name
	if s.template != "" {
		// FILE_COPY copies the template's files where the default,
		// WAL_LOG, writes each of its pages to the WAL: without fsync its
		// checkpoints cost little, and a copy took about half as long.
		create += " TEMPLATE " + s.template + " STRATEGY FILE_COPY"
	}
	if _, err := s.admin.ExecContext(ctx, create); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// NewDatabase creates a database for t, empty or a copy of the template
// (UseTemplate), and returns its URL; the database is dropped after t
// ends, in the background.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	var name string
	select {
	case name = <-s.copies: // nil, and never ready, without a template
	default:
		var err error
		if name, err = s.create(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		select {
		case s.drops <- name:
		case <-s.stopping.Done(): // Stop removes it with the cluster
		}
	})
	return s.dsn(name)
}

// Stop stops the server and removes its cluster, with the databases not
// dropped yet; it returns the errors of the drops that failed. Safe on a
// nil Server.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	s.stop()
	s.wg.Wait()
	errs := s.dropErrs
	if s.admin != nil {
		errs = append(errs, s.admin.Close())
	}
	if s.cmd != nil && s.cmd.Process != nil {
		// SIGINT is PostgreSQL's fast shutdown.
		errs = append(errs, s.cmd.Process.Signal(syscall.SIGINT))
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, s.cmd.Process.Kill(), errors.New("postgres did not stop in 30 s"))
			<-s.exited
		}
	}
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// Refuse makes the database at url, one of NewDatabase's, unreachable as
// a server that went away is: its connections are ended and new ones
// refused until t ends.
func (s *Server) Refuse(t testing.TB, url string) {
	t.Helper()
	name := url[strings.LastIndexByte(url, '/')+1:]
	name, _, _ = strings.Cut(name, "?")
	for _, stmt := range []string{
		"ALTER DATABASE " + name + " ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'",
	} {
		if _, err := s.admin.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("refuse %s: %v", name, err)
		}
	}
	t.Cleanup(func() {
		if _, err := s.admin.Exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true"); err != nil {
			t.Errorf("allow %s again: %v", name, err)
		}
	})
}
