package redistest

import (
	"fmt"
	"testing"
)

func TestServerKillAndRestart(t *testing.T) {
	s := Start(t)
	if got, want := s.URL(), fmt.Sprintf("redis://%s/0", s.Addr()); got != want {
		t.Fatalf("URL() = %q, want %q", got, want)
	}
	steps := []struct {
		name  string
		do    func()
		alive bool
	}{
		{"started", func() {}, true},
		{"killed", s.Kill, false},
		{"killed twice", s.Kill, false},
		{"restarted", s.Restart, true},
		{"restarted while running", s.Restart, true},
	}
	for _, step := range steps {
		step.do()
		if err := s.ping(); (err == nil) != step.alive {
			t.Fatalf("%s: PING error %v, want alive=%v", step.name, err, step.alive)
		}
	}
}
