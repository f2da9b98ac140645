package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/unilog/unilog/auth"
)

func userCommand() *cli.Command {
	usersFlag := &cli.StringFlag{Name: "users", Required: true, Usage: "users `FILE` (as given to unilog broker --users)", EnvVars: []string{"UNILOG_USERS"}}
	return &cli.Command{
		Name:  "user",
		Usage: "manage the SASL users file of a broker",
		Description: `The users file holds SCRAM credentials (salt, iterations, StoredKey, ServerKey),
never passwords; a running broker rereads it when it changes. The file format is
documented in go doc ./auth.`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a user or change its password",
				ArgsUsage: "NAME",
				Description: `The password is read from the first line of stdin (prompted without echo on a
terminal) unless --password is given; stdin keeps it out of the process list and
shell history:

    printf '%s\n' "$PW" | unilog user add --users users.txt alice`,
				Flags: []cli.Flag{
					usersFlag,
					&cli.StringFlag{Name: "password", Usage: "the password (default: first line of stdin)"},
					&cli.StringFlag{Name: "mechanisms", Value: auth.ScramSHA256 + "," + auth.ScramSHA512, Usage: "SCRAM mechanisms to store credentials for"},
					&cli.IntFlag{Name: "iterations", Value: 8192, Usage: fmt.Sprintf("PBKDF2 iterations (%d or more)", auth.MinIterations)},
				},
				Action: runUserAdd,
			},
			{
				Name:      "delete",
				Usage:     "remove a user",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{usersFlag},
				Action:    runUserDelete,
			},
			{
				Name:   "list",
				Usage:  "list users and their mechanisms",
				Flags:  []cli.Flag{usersFlag},
				Action: runUserList,
			},
		},
	}
}

func userName(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("want exactly one user NAME, got %d arguments", c.NArg())
	}
	name := c.Args().First()
	return name, auth.ValidUserName(name)
}

func runUserAdd(c *cli.Context) error {
	name, err := userName(c)
	if err != nil {
		return err
	}
	if name == auth.InterBrokerUser {
		// The broker would shadow it with the nodes' own login.
		return fmt.Errorf("user %s is the nodes' login to each other, derived from the cluster secret: choose another name", name)
	}
	password := c.String("password")
	if !c.IsSet("password") {
		if password, err = readPassword(c.App.Reader, c.App.ErrWriter); err != nil {
			return err
		}
	}
	if password == "" {
		return errors.New("empty password")
	}
	users, err := auth.LoadUsers(c.String("users"))
	if err != nil {
		return err
	}
	var mechs []string
	for _, m := range strings.Split(c.String("mechanisms"), ",") {
		cred, err := auth.NewCredential(strings.TrimSpace(m), password, c.Int("iterations"))
		if err != nil {
			return err
		}
		if err := users.Set(name, cred); err != nil {
			return err
		}
		mechs = append(mechs, cred.Mechanism)
	}
	if err := auth.SaveUsers(c.String("users"), users); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "user %s: %s credentials stored in %s\n", name, strings.Join(mechs, ", "), c.String("users"))
	return nil
}

// readPassword reads the first line of r; from a terminal it prompts and
// does not echo.
func readPassword(r io.Reader, prompt io.Writer) (string, error) {
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "password: ")
		pw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		return string(pw), nil
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func runUserDelete(c *cli.Context) error {
	name, err := userName(c)
	if err != nil {
		return err
	}
	users, err := auth.LoadUsers(c.String("users"))
	if err != nil {
		return err
	}
	if !users.Delete(name) {
		return fmt.Errorf("no user %q in %s", name, c.String("users"))
	}
	if err := auth.SaveUsers(c.String("users"), users); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "user %s deleted from %s\n", name, c.String("users"))
	return nil
}

func runUserList(c *cli.Context) error {
	users, err := auth.LoadUsers(c.String("users"))
	if err != nil {
		return err
	}
	for _, um := range users.List() {
		fmt.Fprintf(c.App.Writer, "%s\t%s\n", um.Name, strings.Join(um.Mechanisms, ","))
	}
	return nil
}
