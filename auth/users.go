package auth

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

// usersMagic and usersVersion open every users file (format in doc.go).
const (
	usersMagic   = "unilog-users"
	usersVersion = 1
)

// Users is the parsed content of a users file: credentials by user, then
// by mechanism.
type Users struct {
	creds map[string]map[string]Credential
}

// Credential implements CredentialLookup.
func (u *Users) Credential(user, mechanism string) (Credential, bool) {
	c, ok := u.creds[user][mechanism]
	return c, ok
}

// Set stores (or replaces) one credential.
func (u *Users) Set(user string, c Credential) error {
	if err := ValidUserName(user); err != nil {
		return err
	}
	if u.creds == nil {
		u.creds = make(map[string]map[string]Credential)
	}
	if u.creds[user] == nil {
		u.creds[user] = make(map[string]Credential)
	}
	u.creds[user][c.Mechanism] = c
	return nil
}

// Delete removes a user and reports whether it existed.
func (u *Users) Delete(user string) bool {
	_, ok := u.creds[user]
	delete(u.creds, user)
	return ok
}

// UserMechanisms is one user and the mechanisms it has credentials for.
type UserMechanisms struct {
	Name       string
	Mechanisms []string
}

// List returns the users sorted by name, each with its mechanisms sorted.
func (u *Users) List() []UserMechanisms {
	out := make([]UserMechanisms, 0, len(u.creds))
	for user, byMech := range u.creds {
		um := UserMechanisms{Name: user}
		for m := range byMech {
			um.Mechanisms = append(um.Mechanisms, m)
		}
		slices.Sort(um.Mechanisms)
		out = append(out, um)
	}
	slices.SortFunc(out, func(a, b UserMechanisms) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ValidUserName refuses names the file format or SCRAM cannot carry:
// empty, not UTF-8, or holding white space or control characters.
func ValidUserName(user string) error {
	if user == "" || !utf8.ValidString(user) {
		return fmt.Errorf("%w: user name %q: must be non-empty UTF-8", ErrFormat, user)
	}
	for _, r := range user {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: user name %q: no white space or control characters", ErrFormat, user)
		}
	}
	return nil
}

// Marshal encodes the users file, lines sorted so equal sets give equal files.
func (u *Users) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d\n", usersMagic, usersVersion)
	b64 := base64.StdEncoding.EncodeToString
	for _, um := range u.List() {
		for _, m := range um.Mechanisms {
			c := u.creds[um.Name][m]
			fmt.Fprintf(&b, "user %s %s %d %s %s %s\n", um.Name, m, c.Iterations, b64(c.Salt), b64(c.StoredKey), b64(c.ServerKey))
		}
	}
	fmt.Fprintf(&b, "crc32c %08x\n", framed.Checksum(b.Bytes()))
	return b.Bytes()
}

// ParseUsers decodes a users file, checking its version and CRC first.
func ParseUsers(data []byte) (*Users, error) {
	body, sum, err := splitCRCTrailer(data)
	if err != nil {
		return nil, err
	}
	if got := framed.Checksum(body); got != sum {
		return nil, fmt.Errorf("%w: users file crc32c %08x, computed %08x", ErrFormat, sum, got)
	}
	u := &Users{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if line == 1 {
			if len(f) != 2 || f[0] != usersMagic {
				return nil, fmt.Errorf("%w: users file must start with %q", ErrFormat, usersMagic)
			}
			if f[1] != strconv.Itoa(usersVersion) {
				return nil, fmt.Errorf("%w: users file version %s, this build reads %d", ErrFormat, f[1], usersVersion)
			}
			continue
		}
		c, user, err := parseUserLine(f)
		if err != nil {
			return nil, fmt.Errorf("users file line %d: %w", line, err)
		}
		if err := u.Set(user, c); err != nil {
			return nil, fmt.Errorf("users file line %d: %w", line, err)
		}
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: users file has no header", ErrFormat)
	}
	return u, nil
}

func splitCRCTrailer(data []byte) ([]byte, uint32, error) {
	trimmed := bytes.TrimSuffix(data, []byte("\n"))
	i := bytes.LastIndexByte(trimmed, '\n')
	last := string(trimmed[i+1:])
	hexsum, ok := strings.CutPrefix(last, "crc32c ")
	raw, err := hex.DecodeString(hexsum)
	if !ok || err != nil || len(raw) != 4 {
		return nil, 0, fmt.Errorf("%w: users file must end with a crc32c line (truncated?)", ErrFormat)
	}
	return data[:i+1], uint32(raw[0])<<24 | uint32(raw[1])<<16 | uint32(raw[2])<<8 | uint32(raw[3]), nil
}

func parseUserLine(f []string) (Credential, string, error) {
	if len(f) != 7 || f[0] != "user" {
		return Credential{}, "", fmt.Errorf("%w: want: user NAME MECHANISM ITERATIONS SALT STORED-KEY SERVER-KEY", ErrFormat)
	}
	h, err := hashFor(f[2])
	if err != nil {
		return Credential{}, "", err
	}
	iter, err := strconv.Atoi(f[3])
	if err != nil || iter < MinIterations || iter > maxIterations {
		return Credential{}, "", fmt.Errorf("%w: iterations %q: want %d to %d", ErrFormat, f[3], MinIterations, maxIterations)
	}
	c := Credential{Mechanism: f[2], Iterations: iter}
	for i, dst := range []*[]byte{&c.Salt, &c.StoredKey, &c.ServerKey} {
		if *dst, err = base64.StdEncoding.DecodeString(f[4+i]); err != nil {
			return Credential{}, "", fmt.Errorf("%w: field %d: %v", ErrFormat, 5+i, err)
		}
	}
	if len(c.Salt) == 0 || len(c.StoredKey) != h().Size() || len(c.ServerKey) != h().Size() {
		return Credential{}, "", fmt.Errorf("%w: empty salt or keys not %d bytes for %s", ErrFormat, h().Size(), f[2])
	}
	return c, f[1], nil
}

// LoadUsers reads a users file; a missing file is an empty set, so the
// first `unilog user add` creates it.
func LoadUsers(path string) (*Users, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Users{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: read users %s: %w", path, err)
	}
	u, err := ParseUsers(data)
	if err != nil {
		return nil, fmt.Errorf("auth: users %s: %w", path, err)
	}
	return u, nil
}

// SaveUsers replaces path atomically and durably (fileops.ReplaceFile),
// readable by its owner only: the keys would allow an offline dictionary
// attack.
func SaveUsers(path string, u *Users) error {
	if err := fileops.ReplaceFile(fileops.OS{}, path, u.Marshal(), 0o600); err != nil {
		return fmt.Errorf("auth: save users: %w", err)
	}
	return nil
}

// UserFile is a CredentialLookup over a users file that rereads it when
// it changes, so `unilog user add` takes effect without a restart. A file
// that stops parsing keeps the last good set rather than locking everyone
// out, and tells OnReloadError.
type UserFile struct {
	w *fileWatch[Users]
	// OnReloadError, when set, hears of each failed reload.
	OnReloadError func(error)
}

// OpenUserFile loads path, which must exist and parse.
func OpenUserFile(path string) (*UserFile, error) {
	w, err := watchFile(path, 0, LoadUsers)
	if err != nil {
		return nil, err
	}
	return &UserFile{w: w}, nil
}

// Credential implements CredentialLookup; it is called once per login,
// and checks the file each time.
func (f *UserFile) Credential(user, mechanism string) (Credential, bool) {
	return f.w.current(f.OnReloadError).Credential(user, mechanism)
}
