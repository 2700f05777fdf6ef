package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"ramanserve/server/configfile"
)

// A configuration file (-config FILE, or RAMAN_CONFIG) is a YAML mapping
// from flag names, without the dash, to values: a scalar for a flag, a
// list of scalars for a repeatable one (-allow-file-root, -cors-origin).
//
//	http-addr: ":5556"
//	prediction-log-retention: 720h
//	cors-origin: [https://console.plant.example]
//
// Each flag takes its value from the first of these that sets it: the
// command line, then its RAMAN_* variable, then the file, then its
// default. A repeatable flag's values all come from that one source. A
// key that is no flag, a value of the wrong shape, a key given twice and
// a file others may write (it names the tokens file and the CURVE
// allow-list, so it grants access) are each an error that names the key
// or the file.

// configFlag is the flag naming the configuration file.
const configFlag = "config"

// maxConfigBytes bounds the configuration file: its settings are a few
// kilobytes.
const maxConfigBytes = 1 << 20

// repeatable names the flags that take a list.
var repeatable = map[string]bool{"allow-file-root": true, "cors-origin": true}

// Sources of a setting, from the strongest.
const (
	sourceFlag    = "flag"
	sourceEnv     = "environment"
	sourceFile    = "file"
	sourceDefault = "default"
)

// setting is one flag's effective value and where it came from, for
// `ramanserve config print`.
type setting struct {
	name   string
	values []string // one value; a repeatable flag's list
	source string
}

// fileSetting is one key of the configuration file.
type fileSetting struct {
	line   int
	values []string
}

// applySources parses args into fs, then sets each flag the command line
// left alone from its RAMAN_* variable, then from the configuration
// file, and returns every flag's effective setting.
func applySources(fs *flag.FlagSet, args []string, getenv func(string) string) ([]setting, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	source := map[string]string{}
	fs.Visit(func(f *flag.Flag) { source[f.Name] = sourceFlag })
	fromEnv, err := applyEnv(fs, getenv, source)
	if err != nil {
		return nil, err
	}
	for _, name := range fromEnv {
		source[name] = sourceEnv
	}
	if path := fs.Lookup(configFlag).Value.String(); path != "" {
		file, err := readConfigFile(path, fs)
		if err != nil {
			return nil, err
		}
		for name, s := range file {
			if source[name] != "" {
				continue
			}
			for _, v := range s.values {
				if err := fs.Set(name, v); err != nil {
					return nil, fmt.Errorf("%s:%d: %s: %w", path, s.line, name, err)
				}
			}
			source[name] = sourceFile
		}
	}
	var settings []setting
	fs.VisitAll(func(f *flag.Flag) {
		s := setting{name: f.Name, values: flagValues(f), source: source[f.Name]}
		if s.source == "" {
			s.source = sourceDefault
		}
		settings = append(settings, s)
	})
	return settings, nil
}

// flagValues is f's value: a repeatable flag's list, or one string.
func flagValues(f *flag.Flag) []string {
	switch v := f.Value.(type) {
	case *rootList:
		return slices.Clone(*v)
	case *originList:
		return slices.Clone(*v)
	}
	return []string{f.Value.String()}
}

// readConfigFile reads the configuration file at path: each key a flag
// of fs, its value's shape right for that flag.
func readConfigFile(path string, fs *flag.FlagSet) (map[string]fileSetting, error) {
	data, err := configfile.ReadTrusted(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w", configFlag, err)
	}
	settings, err := parseConfigFile(data, fs)
	if err != nil {
		return nil, fmt.Errorf("-%s %s: %w", configFlag, path, err)
	}
	return settings, nil
}

// errConfigFile is wrapped by every error in a configuration file's
// content.
var errConfigFile = errors.New("configuration file")

// parseConfigFile is the one parser of a configuration file's content.
// Values are not checked here: each is checked by its flag when set.
func parseConfigFile(data []byte, fs *flag.FlagSet) (map[string]fileSetting, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: not YAML: %v", errConfigFile, err)
	}
	settings := map[string]fileSetting{}
	if doc.Kind == 0 { // empty, or comments only
		return settings, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: want a mapping of flag names to values", errConfigFile, root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, value := root.Content[i], root.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%w: line %d: a key must be a flag name", errConfigFile, key.Line)
		}
		name := key.Value
		switch {
		case name == configFlag:
			return nil, fmt.Errorf("%w: line %d: %q cannot be set in the file itself", errConfigFile, key.Line, name)
		case fs.Lookup(name) == nil:
			return nil, fmt.Errorf("%w: line %d: unknown setting %q (the keys are the flags' names, without the dash: see ramanserve -h)", errConfigFile, key.Line, name)
		}
		if prev, dup := settings[name]; dup {
			return nil, fmt.Errorf("%w: line %d: %q is set twice (first on line %d)", errConfigFile, key.Line, name, prev.line)
		}
		values, err := settingValues(name, value)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %s: %v", errConfigFile, value.Line, name, err)
		}
		settings[name] = fileSetting{line: key.Line, values: values}
	}
	return settings, nil
}

// settingValues are the values of the flag name from its node: a scalar,
// or for a repeatable flag a scalar or a list of them.
func settingValues(name string, n *yaml.Node) ([]string, error) {
	switch {
	case n.Kind == yaml.AliasNode:
		return nil, errors.New("aliases are not supported")
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, errors.New("no value (leave the key out for the default)")
	case n.Kind == yaml.ScalarNode:
		return []string{n.Value}, nil
	case n.Kind == yaml.SequenceNode && repeatable[name]:
		values := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: each item must be a value", item.Line)
			}
			values = append(values, item.Value)
		}
		return values, nil
	case n.Kind == yaml.SequenceNode:
		return nil, errors.New("takes one value, not a list")
	}
	return nil, errors.New("want a value, not a mapping")
}

// runConfig is `ramanserve config print [flags]`: the effective
// configuration from the flags, the environment and the file, as a
// configuration file with each line's source, secrets redacted.
func runConfig(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "print" {
		fmt.Fprintln(stderr, "usage: ramanserve config print [flags]: the effective configuration, from the flags, RAMAN_* variables and -config file")
		return 2
	}
	_, opts, err := parseConfig(args[1:], getenv, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve config:", err)
		return 1
	}
	printSettings(stdout, opts.settings)
	return 0
}

// printSettings writes settings as a configuration file, each line with
// its source as a comment.
func printSettings(w io.Writer, settings []setting) {
	fmt.Fprintln(w, "# ramanserve's effective configuration; each line's comment says where the value came from")
	for _, s := range settings {
		if s.name == configFlag {
			fmt.Fprintf(w, "# %s: %s (%s)\n", s.name, quoteYAML(s.values[0]), s.source)
			continue
		}
		values := make([]string, len(s.values))
		for i, v := range s.values {
			values[i] = quoteYAML(redact(s.name, v))
		}
		if repeatable[s.name] {
			fmt.Fprintf(w, "%s: [%s]  # %s\n", s.name, strings.Join(values, ", "), s.source)
			continue
		}
		fmt.Fprintf(w, "%s: %s  # %s\n", s.name, values[0], s.source)
	}
}

// quoteYAML is v as a YAML scalar that reads back as the same string.
func quoteYAML(v string) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", v)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// redact hides what could be a secret in a setting. The server refuses a
// password in -store's URL, but config print must not echo one either,
// nor a password=, sslpassword= or other parameter naming one.
func redact(name, v string) string {
	if name != "store" || v == "" {
		return v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "(unparsable URL, redacted)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	q := u.Query()
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
