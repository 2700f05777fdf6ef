package pgtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a PostgreSQL cluster of one test's own, for the tests that
// stop the database under running servers (the shared cluster of
// .ci/postgres serves every other test at once and must stay up). It
// runs as the unprivileged user nobody when the test runs as root, as
// PostgreSQL requires.
type Cluster struct {
	dir, bin string
	port     int
	asUser   *syscall.Credential // nil: as the test's own user
	// URL is the superuser's URL of the cluster's postgres database; the
	// password is in the passfile it names.
	URL string
}

// NewCluster starts a new cluster in a temporary directory and stops and
// removes it when t ends. Without PostgreSQL's server binaries the test
// is skipped, or failed where a cluster is required (make test); under
// -short (make test-quick) it is skipped.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		// make test-quick, the inner loop, runs no database.
		t.Skip("-short: no PostgreSQL cluster")
	}
	bin := serverBinDir()
	if bin == "" {
		if os.Getenv(envRequired) != "" {
			t.Fatal("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (Debian package postgresql)")
		}
		t.Skip("no PostgreSQL server binaries (Debian package postgresql)")
	}
	dir, err := os.MkdirTemp("", "ramanserve-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{dir: dir, bin: bin}
	t.Cleanup(func() { c.kill(); os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		c.asUser = nobody(t)
		if err := os.Chown(dir, int(c.asUser.Uid), int(c.asUser.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	password := randomHex(12)
	pwfile := filepath.Join(dir, "pwfile")
	c.writeOwned(t, pwfile, password+"\n", 0o600)
	if out, err := c.command(filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "ramanserve_test", "--pwfile="+pwfile,
		"--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	os.Remove(pwfile)
	c.port = freePort(t)
	passfile := filepath.Join(dir, "pgpass")
	if err := os.WriteFile(passfile, []byte(fmt.Sprintf("127.0.0.1:%d:*:ramanserve_test:%s\n", c.port, password)), 0o600); err != nil {
		t.Fatal(err)
	}
	c.URL = fmt.Sprintf("postgres://ramanserve_test@127.0.0.1:%d/postgres?sslmode=disable&passfile=%s", c.port, passfile)
	c.Start(t)
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// Start starts the cluster (again, after Kill) and waits until it
// accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
	if out, err := c.command(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Kill stops the cluster as a crash does: SIGKILL to the postmaster and
// every process it started, nothing flushed or shut down.
func (c *Cluster) Kill(t testing.TB) {
	t.Helper()
	if !c.kill() {
		t.Fatal("the cluster was not running")
	}
}

// kill sends SIGKILL to the postmaster and its children and waits until
// they are gone; it reports whether there was a postmaster.
func (c *Cluster) kill() bool {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return false
	}
	pids := append(children(pid), pid)
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range pids {
		for syscall.Kill(p, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return true
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses
		// and may hold spaces: state, then the parent's pid.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	if c.asUser != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.asUser}
		cmd.Env = append(os.Environ(), "HOME="+c.dir)
	}
	return cmd
}

func (c *Cluster) writeOwned(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if c.asUser != nil {
		if err := os.Chown(path, int(c.asUser.Uid), int(c.asUser.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

func serverBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

func nobody(t testing.TB) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("PostgreSQL cannot run as root, and there is no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
