package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/server/configfile"
)

func hashOf(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func TestParseAndAuthenticate(t *testing.T) {
	file := "# tokens of the rig\n\n" +
		"read    " + hashOf("dash-token") + "\tdashboard   # the wall screen\n" +
		"operate " + strings.ToUpper(hashOf("ci-token")) + " ci@build\r\n"
	set, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 2 {
		t.Fatalf("%d tokens, want 2", set.Len())
	}
	st := NewStore(set)
	for _, c := range []struct {
		header string
		want   Identity
		err    error
	}{
		{"Bearer dash-token", Identity{"dashboard", Read}, nil},
		{"bearer   ci-token", Identity{"ci@build", Operate}, nil},
		{"Bearer other", Identity{}, ErrUnknownToken},
		{"", Identity{}, ErrNoToken},
		{"Bearer", Identity{}, ErrNoToken},
		{"Bearer ", Identity{}, ErrNoToken},
		{"Basic ZGFzaC10b2tlbg==", Identity{}, ErrNoToken},
		{"dash-token", Identity{}, ErrNoToken},
		{"Bearer dash token", Identity{}, ErrNoToken},
		{"Bearer " + strings.Repeat("a", maxTokenLen+1), Identity{}, ErrNoToken},
	} {
		id, err := st.Authenticate(c.header)
		if id != c.want || !errors.Is(err, c.err) {
			t.Errorf("Authenticate(%.40q) = %+v, %v; want %+v, %v", c.header, id, err, c.want, c.err)
		}
	}
	// A swap takes effect for the next call, whole.
	next, err := Parse(strings.NewReader("operate " + hashOf("new-token") + " rotated\n"))
	if err != nil {
		t.Fatal(err)
	}
	st.Swap(next)
	if _, err := st.Authenticate("Bearer dash-token"); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("old token after swap: %v", err)
	}
	if id, err := st.Authenticate("Bearer new-token"); err != nil || id.Name != "rotated" {
		t.Errorf("new token after swap: %+v, %v", id, err)
	}
}

func TestRoleAllows(t *testing.T) {
	for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
		if !Read.Allows(m) || !Operate.Allows(m) {
			t.Errorf("%s refused", m)
		}
	}
	for _, m := range []string{"POST", "DELETE", "PUT", "PATCH", "get", "X"} {
		if Read.Allows(m) {
			t.Errorf("read allows %s", m)
		}
		if !Operate.Allows(m) {
			t.Errorf("operate refuses %s", m)
		}
	}
	if Role("admin").Allows("GET") {
		t.Error("unknown role allows GET")
	}
}

func TestParseRefuses(t *testing.T) {
	h1, h2 := hashOf("a"), hashOf("b")
	for _, c := range []struct {
		name, file, want string
	}{
		{"unknown role", "admin " + h1 + " x\n", "line 1: unknown role"},
		{"short hash", "read abc x\n", "line 1: field 2 has 3 characters"},
		{"token in place of hash", "read my-secret-token x\n", "line 1: field 2"},
		{"not hex", "read " + strings.Repeat("z", 64) + " x\n", "line 1: field 2 is not hex"},
		{"two fields", "read " + h1 + "\n", "line 1: 2 fields"},
		{"four fields", "read " + h1 + " x y\n", "line 1: 4 fields"},
		{"duplicate hash", "read " + h1 + " x\n# c\noperate " + strings.ToUpper(h1) + " y\n", "line 3: the same hash as line 1"},
		{"duplicate name", "read " + h1 + " x\noperate " + h2 + " x\n", `line 2: name "x" already used on line 1`},
		{"bad name", "read " + h1 + " a/b\n", "line 1: name has character '/'"},
		{"long name", "read " + h1 + " " + strings.Repeat("n", MaxNameLen+1) + "\n", "line 1: name longer"},
		{"long line", "read " + h1 + " x\n" + strings.Repeat(" ", MaxLineBytes+1) + "\n", "line 2: longer than"},
		{"empty", "# nothing\n\n", "no token"},
		{"huge", strings.Repeat("#\n", MaxFileBytes/2+1), "over"},
	} {
		_, err := Parse(strings.NewReader(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "my-secret-token") {
			t.Errorf("%s: the error quotes the line: %v", c.name, err)
		}
	}
}

func TestParseBoundsTokens(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i <= MaxTokens; i++ {
		b.WriteString("read " + hashOf(string(rune(i))+"t") + " n" + hex.EncodeToString([]byte{byte(i >> 8), byte(i)}) + "\n")
	}
	if _, err := Parse(&b); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("%d tokens: %v", MaxTokens+1, err)
	}
}

// FuzzParse: no input panics, and every set parsed holds exactly the
// entries its lines name: each entry's name finds its own hash.
func FuzzParse(f *testing.F) {
	f.Add("read " + hashOf("a") + " x\n")
	f.Add("operate " + hashOf("b") + " ci # c\n\n# only\n")
	f.Add("read\t" + hashOf("a") + "\tx\r\nread " + hashOf("a") + " y\n")
	f.Add("#\n read  " + strings.ToUpper(hashOf("c")) + "  z  \n")
	f.Fuzz(func(t *testing.T, file string) {
		set, err := Parse(strings.NewReader(file))
		if err != nil {
			if set != nil {
				t.Fatal("a set with an error")
			}
			return
		}
		if set.Len() == 0 || set.Len() > MaxTokens {
			t.Fatalf("%d entries", set.Len())
		}
		names := map[string]bool{}
		for _, e := range set.entries {
			if names[e.name] || checkName(e.name) != nil || e.name == "" {
				t.Fatalf("name %q repeated or unfit", e.name)
			}
			names[e.name] = true
			id, err := set.lookup(e.hash)
			if err != nil || id.Name != e.name || id.Role != e.role {
				t.Fatalf("lookup of %q's hash: %+v, %v", e.name, id, err)
			}
		}
	})
}

// FuzzAuthenticate: any header value; an identity only for a header whose
// token is the known one, and the token never contains a space.
func FuzzAuthenticate(f *testing.F) {
	set, err := Parse(strings.NewReader("operate " + hashOf("s3cret") + " ci\n"))
	if err != nil {
		f.Fatal(err)
	}
	st := NewStore(set)
	for _, s := range []string{"Bearer s3cret", "bearer  s3cret", "Bearer", "Basic s3cret", "Bearer s3cret ", "Bearer\ts3cret", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		id, err := st.Authenticate(header)
		token, ok := bearerToken(header)
		switch {
		case !ok && !errors.Is(err, ErrNoToken):
			t.Fatalf("%q: no token parsed, but %v", header, err)
		case ok && strings.ContainsAny(token, " \t\r\n"):
			t.Fatalf("%q: token %q has white space", header, token)
		case err == nil && (token != "s3cret" || id.Name != "ci"):
			t.Fatalf("%q: authenticated as %+v with token %q", header, id, token)
		case ok && token == "s3cret" && err != nil:
			t.Fatalf("%q: %v", header, err)
		}
	})
}

// TestReadFileRefusesFIFO: a tokens path set to a FIFO fails at once
// instead of blocking the start or a SIGHUP reload.
func TestReadFileRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(path); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, configfile.ErrNotRegular) {
			t.Fatalf("ReadFile of a FIFO: %v, want ErrNotRegular", err)
		}
	case <-time.After(time.Minute): // a correctness bound: it blocks for ever without the fix
		t.Fatal("ReadFile of a FIFO still blocked after 10 s")
	}
}

func TestLogin(t *testing.T) {
	set, err := Parse(strings.NewReader(FileLine(Read, "s3cret-token", "historian") + FileLine(Operate, "other-token", "ops")))
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(set)
	if id, err := st.Login("historian", "s3cret-token"); err != nil || id.Role != Read || id.Name != "historian" {
		t.Fatalf("Login = %+v, %v; want the read identity historian", id, err)
	}
	for _, c := range [][2]string{{"historian", "wrong"}, {"ops", "s3cret-token"}, {"", ""}, {"historian", strings.Repeat("x", 5000)}} {
		if _, err := st.Login(c[0], c[1]); !errors.Is(err, ErrWrongUser) {
			t.Errorf("Login(%q, %.10q) = %v, want ErrWrongUser", c[0], c[1], err)
		}
	}
}
