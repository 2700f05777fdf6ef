package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeConfig writes content to a configuration file of mode 0640 and
// returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ramanserve.yaml")
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// envOf is a getenv over kv.
func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// sourceOf is the setting of name in settings.
func sourceOf(t *testing.T, settings []setting, name string) setting {
	t.Helper()
	for _, s := range settings {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no setting %s", name)
	return setting{}
}

// TestConfigPrecedence: each flag takes its value from the command line,
// else its RAMAN_* variable, else the file, else its default; a
// repeatable flag's values come from one source only.
func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `
# every source sets some of these
http-addr: "127.0.0.1:7001"
zmq-addr: "tcp://127.0.0.1:7002"
log-level: warn
cors-origin: [https://file.example, https://file2.example]
max-upload-bytes: 1000
shutdown-grace: 7s
log-spectra: true
`)
	env := envOf(map[string]string{
		"RAMAN_CONFIG":           file,
		"RAMAN_ZMQ_ADDR":         "tcp://127.0.0.1:8002",
		"RAMAN_CORS_ORIGIN":      "https://env.example",
		"RAMAN_MAX_UPLOAD_BYTES": "2000",
	})
	cfg, opts, err := parseConfig([]string{"-max-upload-bytes", "3000", "-log-level", "debug"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, got, want, source string
	}{
		{"http-addr", cfg.HTTPAddr, "127.0.0.1:7001", sourceFile},
		{"zmq-addr", cfg.ZMQEndpoint, "tcp://127.0.0.1:8002", sourceEnv},
		{"log-level", opts.logLevel, "debug", sourceFlag},
		{"cors-origin", strings.Join(cfg.HTTP.CORSOrigins, " "), "https://env.example", sourceEnv},
		{"shutdown-grace", opts.grace.String(), "7s", sourceFile},
		{"log-format", opts.logFormat, "text", sourceDefault},
		{"config", file, file, sourceEnv},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
		if s := sourceOf(t, opts.settings, c.name); s.source != c.source {
			t.Errorf("%s from %s, want %s", c.name, s.source, c.source)
		}
	}
	if cfg.HTTP.MaxUploadBytes != 3000 || sourceOf(t, opts.settings, "max-upload-bytes").source != sourceFlag {
		t.Errorf("max-upload-bytes = %d, want the flag's 3000", cfg.HTTP.MaxUploadBytes)
	}
	if !cfg.Evidence.LogSpectra {
		t.Error("log-spectra: true in the file was not applied")
	}

	// Without the environment's list, the file's whole list applies.
	cfg, _, err = parseConfig([]string{"-config", file}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://file.example", "https://file2.example"}; !slices.Equal(cfg.HTTP.CORSOrigins, want) {
		t.Errorf("cors-origin from the file = %q, want %q", cfg.HTTP.CORSOrigins, want)
	}
	// A list on the command line replaces the file's.
	cfg, _, err = parseConfig([]string{"-config", file, "-cors-origin", "https://flag.example"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://flag.example"}; !slices.Equal(cfg.HTTP.CORSOrigins, want) {
		t.Errorf("cors-origin with a flag = %q, want %q", cfg.HTTP.CORSOrigins, want)
	}
}

// TestConfigFileRefusals: what a configuration file may not hold, each
// refused with the key or line it is about.
func TestConfigFileRefusals(t *testing.T) {
	for _, c := range []struct {
		name, content, says string
	}{
		{"an unknown key", "http-addr: :5556\nhttp-adress: :5557\n", `line 2: unknown setting "http-adress"`},
		{"a key set twice", "log-level: info\nlog-level: warn\n", `line 2: "log-level" is set twice (first on line 1)`},
		{"a list for a single flag", "log-level: [info, warn]\n", "log-level: takes one value, not a list"},
		{"a mapping value", "log-level:\n  level: info\n", "log-level: want a value, not a mapping"},
		{"a key without a value", "log-level:\n", "log-level: no value"},
		{"a list item that is no value", "cors-origin: [[a]]\n", "each item must be a value"},
		{"the config key itself", "config: other.yaml\n", `"config" cannot be set in the file itself`},
		{"a list at the top", "- http-addr\n", "want a mapping of flag names to values"},
		{"no YAML", "http-addr: [unclosed\n", "not YAML"},
		{"a value its flag refuses", "max-upload-bytes: lots\n", `:1: max-upload-bytes: parse error`},
		{"an alias", "log-format: &f text\nlog-level: *f\n", "aliases are not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writeConfig(t, c.content)
			_, _, err := parseConfig([]string{"-config", file}, envOf(nil), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want one saying %q", err, c.says)
			}
		})
	}
	t.Run("a file others may write", func(t *testing.T) {
		file := writeConfig(t, "log-level: info\n")
		if err := os.Chmod(file, 0o666); err != nil {
			t.Fatal(err)
		}
		_, _, err := parseConfig([]string{"-config", file}, envOf(nil), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "0666") {
			t.Fatalf("err = %v, want a refusal naming the file and its mode", err)
		}
	})
	t.Run("a missing file", func(t *testing.T) {
		_, _, err := parseConfig([]string{"-config", filepath.Join(t.TempDir(), "none.yaml")}, envOf(nil), &bytes.Buffer{})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want not exist", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, _, err := parseConfig([]string{"-config", writeConfig(t, "# nothing set\n")}, envOf(nil), &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConfigPrint: `config print` shows every setting with its source,
// redacts a password in the store URL, and reads back, as a
// configuration file, to the same settings.
func TestConfigPrint(t *testing.T) {
	file := writeConfig(t, `
log-level: warn
cors-origin: ["https://a.example", "https://b.example:8443"]
store: "postgres://ramanserve@db.example:5432/rs?sslmode=verify-full&sslpassword=hunter2"
confidence-tolerance: "EPA=0.5"
`)
	var out, errOut bytes.Buffer
	if code := runConfig([]string{"print", "-config", file, "-log-format", "json"}, envOf(map[string]string{"RAMAN_SHUTDOWN_GRACE": "9s"}), &out, &errOut); code != 0 {
		t.Fatalf("config print: exit %d: %s", code, errOut.String())
	}
	printed := out.String()
	for _, want := range []string{
		"log-level: warn  # file\n",
		"log-format: json  # flag\n",
		"shutdown-grace: 9s  # environment\n",
		"http-addr: :5556  # default\n",
		"cors-origin: [https://a.example, https://b.example:8443]  # file\n",
		"sslpassword=REDACTED",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("config print lacks %q:\n%s", want, printed)
		}
	}
	if strings.Contains(printed, "hunter2") {
		t.Errorf("config print shows the password:\n%s", printed)
	}

	// Read back (without the redacted store), the printed file gives
	// the same settings.
	var kept []string
	for _, line := range strings.Split(printed, "\n") {
		if !strings.HasPrefix(line, "store:") {
			kept = append(kept, line)
		}
	}
	_, again, err := parseConfig([]string{"-config", writeConfig(t, strings.Join(kept, "\n"))}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("the printed configuration does not parse: %v\n%s", err, printed)
	}
	_, first, _ := parseConfig([]string{"-config", file, "-log-format", "json"}, envOf(map[string]string{"RAMAN_SHUTDOWN_GRACE": "9s"}), &bytes.Buffer{})
	for i, s := range first.settings {
		if s.name == "store" || s.name == configFlag {
			continue
		}
		if !slices.Equal(s.values, again.settings[i].values) {
			t.Errorf("%s: printed and read back as %q, was %q", s.name, again.settings[i].values, s.values)
		}
	}

	if code := runConfig([]string{"show"}, envOf(nil), &out, &errOut); code != 2 {
		t.Errorf("config show: exit %d, want 2 (usage)", code)
	}
}

// FuzzConfigFile: the configuration file's parser never panics, and what
// it accepts names only flags, each with at least one value.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("http-addr: :5556\ncors-origin: [a, b]\n"))
	f.Add([]byte("log-level:\n"))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Add([]byte("? [complex]\n: key\n"))
	f.Add([]byte("{log-level: info, log-level: warn}"))
	// The parser needs only the flags' names.
	fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
	for name := range flagNames(f) {
		fs.String(name, "", "")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		settings, err := parseConfigFile(data, fs)
		if err != nil {
			if !errors.Is(err, errConfigFile) {
				t.Fatalf("error not wrapping errConfigFile: %v", err)
			}
			return
		}
		for name, s := range settings {
			if fs.Lookup(name) == nil || name == configFlag {
				t.Fatalf("accepted key %q", name)
			}
			if len(s.values) == 0 && !repeatable[name] {
				t.Fatalf("%q accepted without a value", name)
			}
		}
	})
}
