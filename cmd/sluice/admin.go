package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/store"
)

// adminUsage is what "sluice admin" prints about itself.
const adminUsage = `Usage:
  sluice admin reset-password USER [flags]  set USER's password in the database and end their sessions

Admin commands work on the database file directly, not through the API:
they are for when nobody can log in (a lost admin password).

Flags of reset-password:
`

// admin runs "sluice admin reset-password".
func admin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	command, rest := "", args
	if len(args) > 0 {
		command, rest = args[0], args[1:]
	}
	if command == "reset-password" {
		return resetPassword(ctx, rest, stdout, stderr)
	}
	fs, _, _ := resetPasswordFlags()
	if isHelpFlag(command) {
		printUsage(stdout, adminUsage, fs)
		return flag.ErrHelp
	}
	printUsage(stderr, adminUsage, fs)
	if command == "" {
		return errors.New("admin: want a command, reset-password")
	}
	return fmt.Errorf("admin: unknown command %q, want reset-password", command)
}

func resetPasswordFlags() (fs *flag.FlagSet, dbPath, password *string) {
	fs = flag.NewFlagSet("sluice admin reset-password", flag.ContinueOnError)
	dbPath = fs.String("db", "./sluice.db", "the server's database: a SQLite file or a PostgreSQL URL, as the server's --db (env SLUICE_DB)")
	password = fs.String("password", "", "the new password, 10 to 72 bytes; if unset, a random one is printed once (env SLUICE_PASSWORD)")
	return fs, dbPath, password
}

// resetPassword sets a user's password in the database and ends every
// session of theirs, as PATCH /users/{id} does: a lost admin password
// leaves no one to call the API. The server may be running meanwhile;
// SQLite lets the two write in turn.
func resetPassword(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, dbPath, password := resetPasswordFlags()
	usage := "Usage: sluice admin reset-password USER [flags]\n\nSets USER's password in the database directly and ends their sessions.\nExit codes: 0 success, 1 an error (an unknown user included).\n\nFlags:\n"
	username := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		username, args = args[0], args[1:]
	}
	if err = parseFlags(fs, args, usage, stdout, stderr); err != nil {
		return err
	}
	if username == "" {
		printUsage(stderr, usage, fs)
		return errors.New("admin reset-password: want the user's name, as in: sluice admin reset-password admin")
	}
	generated := *password == ""
	if generated {
		*password = rand.Text()
	}
	if problem := server.PasswordProblem(*password); problem != "" {
		return fmt.Errorf("admin reset-password: --password %s", problem)
	}
	// store.Open would create a missing file: a mistyped --db must not
	// pass for a database without that user. A PostgreSQL URL names a
	// database that must exist already.
	if !strings.HasPrefix(*dbPath, "file:") && !store.IsPostgres(*dbPath) {
		if _, err := os.Stat(*dbPath); err != nil {
			return fmt.Errorf("admin reset-password: no database at %s (--db): %w", *dbPath, err)
		}
	}
	st, err := store.Open(ctx, *dbPath, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	user, err := st.UserByName(ctx, username)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("admin reset-password: no user named %q in %s", username, *dbPath)
	}
	if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(*password), cmp.Or(passwordCost, bcrypt.DefaultCost))
	if err != nil {
		return err
	}
	if _, err := st.UpdateUser(ctx, user.ID, user.Role, string(hash), nil); err != nil {
		return err
	}
	if generated {
		_, err = fmt.Fprintf(stdout, "New password for %s (shown only this once; change it after logging in):\n%s\n", user.Username, *password)
	} else {
		_, err = fmt.Fprintf(stdout, "The password of %s is set.\n", user.Username)
	}
	if err == nil {
		_, err = fmt.Fprintf(stdout, "Every session of %s has ended.\n", user.Username)
	}
	return err
}
