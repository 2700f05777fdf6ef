package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
)

// Finding is one problem `ramanserve registry check` found.
type Finding struct {
	File    string // relative to the registry directory
	Problem string
	// Repair says what -repair did about it; "" when nothing was done
	// (not repairing, or nothing is safe to do).
	Repair string
}

// CheckReport is the outcome of Check.
type CheckReport struct {
	Dir      string
	Models   int // index entries checked
	Findings []Finding
}

// Unrepaired counts the findings that still need an operator.
func (c *CheckReport) Unrepaired() int {
	n := 0
	for _, f := range c.Findings {
		if f.Repair == "" {
			n++
		}
	}
	return n
}

// Check verifies a registry directory the way an fsck does: every model
// file against the size and SHA-256 its entry recorded and through its
// reader, the index against models/ (entries without a file, files
// without an entry, a dangling active pointer or shadow), and leftover
// temp files.
// It takes the registry's lock first, so it refuses to run
// (filestore.ErrLocked) while a server has the directory open.
//
// With repair it fixes only what is safe, and deletes nothing but its own
// temp files: an index that is missing, empty or corrupt is rebuilt from
// the model files (a corrupt one is first set aside as
// index.json.corrupt-<time>); a file without an entry is adopted (archived)
// or, when unreadable, moved to quarantine/ like a file that fails its
// checksum (whose entry is then dropped); an entry whose file is gone is
// dropped; a dangling active pointer is cleared, and so is a shadow that
// names no entry or the active one; a missing checksum is
// recorded. Files already in quarantine/ are reported and left for the
// operator.
func Check(ctx context.Context, dir string, opts Options, repair bool) (*CheckReport, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: no registry directory at %s", store.ErrRegistry, dir)
	}
	files, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer files.Close()
	r, err := newRegistry(files, files, files.Dir(), opts)
	if err != nil {
		return nil, err
	}
	c := &checker{r: r, files: files, repair: repair, report: &CheckReport{Dir: r.dir}}
	if err := c.run(ctx); err != nil {
		return nil, err
	}
	return c.report, nil
}

type checker struct {
	r       *Registry
	files   *filestore.Store // Check is the file store's check: it sets a corrupt index.json aside
	repair  bool
	report  *CheckReport
	changed bool // the index needs writing
}

func (c *checker) find(file, problem, repair string) {
	if !c.repair {
		repair = ""
	}
	c.report.Findings = append(c.report.Findings, Finding{File: file, Problem: problem, Repair: repair})
}

func (c *checker) run(ctx context.Context) error {
	if err := c.readIndex(ctx); err != nil {
		return err
	}
	c.tempFiles()
	if err := c.entries(ctx); err != nil {
		return err
	}
	c.activePointer()
	c.shadowPointer()
	if err := c.removals(ctx); err != nil {
		return err
	}
	if err := c.orphanFiles(ctx); err != nil {
		return err
	}
	quarantined, err := c.r.artifacts.Quarantined(ctx)
	if err != nil {
		return fmt.Errorf("%w: list the quarantine: %w", store.ErrRegistry, err)
	}
	for _, q := range quarantined {
		c.find(q, "in quarantine: read "+q+filestore.ReasonSuffix+", then remove it or put a fixed copy back in models/", "")
	}
	if c.repair && c.changed {
		c.r.mu.Lock()
		err := c.r.commit(ctx, c.r.ix)
		c.r.mu.Unlock()
		if err != nil {
			return fmt.Errorf("write the repaired index: %w", err)
		}
	}
	sort.SliceStable(c.report.Findings, func(i, j int) bool { return c.report.Findings[i].File < c.report.Findings[j].File })
	return nil
}

// readIndex loads the index, or starts an empty one to rebuild. It never
// rebuilds over an index written by a newer server.
func (c *checker) readIndex(ctx context.Context) error {
	ix, rev, err := c.r.index.ReadIndex(ctx)
	switch {
	case errors.Is(err, filestore.ErrNewerFormat):
		return fmt.Errorf("%w: %w; not touching it", store.ErrRegistry, err)
	case errors.Is(err, store.ErrIndexCorrupt):
		repair := ""
		if c.repair {
			aside, aerr := c.files.SetAsideCorruptIndex(c.r.opts.Now())
			if aerr != nil {
				return aerr
			}
			repair = "set aside as " + aside + "; rebuilt from the model files"
			if _, rev, aerr = c.r.index.ReadIndex(ctx); aerr != nil {
				return fmt.Errorf("%w: %w", store.ErrRegistry, aerr)
			}
		}
		c.find(filestore.IndexFile, err.Error(), repair)
		c.r.ix, c.r.rev, c.changed = store.NewIndex(), rev, true
	case err != nil:
		return fmt.Errorf("%w: %w", store.ErrRegistry, err)
	case rev == 0:
		c.r.ix, c.r.rev = ix, rev
		if len(c.r.orphans(ctx)) > 0 {
			c.find(filestore.IndexFile, "missing or empty while models/ holds model files", "rebuilt from the model files")
			c.changed = true
		}
	default:
		c.r.ix, c.r.rev = ix, rev
	}
	return nil
}

func (c *checker) tempFiles() {
	for _, rel := range c.r.tempFiles() {
		repair := ""
		if c.repair && os.Remove(filepath.Join(c.r.dir, rel)) == nil {
			repair = "removed"
		}
		c.find(rel, "temp file of an interrupted write", repair)
	}
}

// entries checks every index entry's file: present, a regular file, the
// recorded size and checksum, readable by its reader.
func (c *checker) entries(ctx context.Context) error {
	present, err := c.r.artifactNames(ctx)
	if err != nil {
		return fmt.Errorf("%w: list the model files: %w", store.ErrRegistry, err)
	}
	versions := make([]string, 0, len(c.r.ix.Models))
	for v := range c.r.ix.Models {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	c.report.Models = len(versions)
	for _, v := range versions {
		e := c.r.ix.Models[v]
		if !present[e.File] {
			c.find(e.File, fmt.Sprintf("index entry %s has no file", v), "entry dropped")
			c.drop(v)
			continue
		}
		_, got, err := c.r.openChecked(ctx, e, fingerprint(e), max(c.r.opts.MaxImportBytes, maxArtifactBytes))
		if err != nil {
			repair := ""
			if c.repair {
				if q, qerr := c.r.quarantine(ctx, e.File, err.Error()); qerr == nil {
					repair = "moved to " + q + "; entry dropped"
					c.drop(v)
				}
			}
			c.find(e.File, fmt.Sprintf("model %s: %v", v, err), repair)
			continue
		}
		if ReservedVersion(v) {
			c.reservedName(v, e)
		}
		if e.SHA256 == "" {
			repair := ""
			if c.repair {
				e.SizeBytes, e.SHA256, c.changed = got.SizeBytes, got.SHA256, true
				repair = "checksum recorded"
			}
			c.find(e.File, fmt.Sprintf("model %s has no recorded checksum (written before checksums were kept)", v), repair)
		}
	}
	return nil
}

// reservedName reports an entry named like a management route (load, list,
// info), which a registry written before those names were reserved may
// hold: it loads, but GET and DELETE /model/{version} reach the route, not
// the version. Repair renames the entry (and the active pointer) to a free
// name; the file keeps its name, so nothing on disk moves.
func (c *checker) reservedName(version string, e *Entry) {
	repair := ""
	if c.repair {
		renamed := c.r.freeVersion(version)
		delete(c.r.ix.Models, version)
		e.Version = renamed
		c.r.ix.Models[renamed] = e
		if c.r.ix.Active == version {
			c.r.ix.Active = renamed
		}
		if c.r.ix.Shadow == version {
			c.r.ix.Shadow = renamed
		}
		c.changed = true
		repair = "renamed to " + renamed
	}
	c.find(e.File, fmt.Sprintf("version %s names a route (/model/%s), so GET and DELETE /model/{version} cannot reach it", version, version), repair)
}

func (c *checker) drop(version string) {
	if !c.repair {
		return
	}
	delete(c.r.ix.Models, version)
	if c.r.ix.Active == version {
		c.r.ix.Active = ""
	}
	if c.r.ix.Shadow == version {
		c.r.ix.Shadow = ""
	}
	c.changed = true
}

// activePointer checks that the active pointer names an entry and that
// the statuses agree with it.
func (c *checker) activePointer() {
	ix := c.r.ix
	if ix.Active != "" && ix.Models[ix.Active] == nil {
		c.find(filestore.IndexFile, fmt.Sprintf("the active pointer names %q, which has no entry", ix.Active), "active pointer cleared")
		if c.repair {
			ix.Active, c.changed = "", true
		}
	}
	for _, e := range ix.Models {
		if (e.Status == StatusActive) != (e.Version == ix.Active) {
			want := StatusArchived
			if e.Version == ix.Active {
				want = StatusActive
			}
			c.find(e.File, fmt.Sprintf("model %s is %s, but the active pointer is %q", e.Version, e.Status, ix.Active), "status set to "+string(want))
			if c.repair {
				e.Status, c.changed = want, true
			}
		}
	}
}

// shadowPointer checks that the shadow names an entry other than the
// active one (the server keeps it so; a hand edit may not). Repair clears
// it: the server then runs without a shadow until one is set again.
func (c *checker) shadowPointer() {
	ix := c.r.ix
	switch {
	case ix.Shadow == "":
		return
	case ix.Models[ix.Shadow] == nil:
		c.find(filestore.IndexFile, fmt.Sprintf("the shadow names %q, which has no entry", ix.Shadow), "shadow cleared")
	case ix.Shadow == ix.Active:
		c.find(filestore.IndexFile, fmt.Sprintf("the shadow names %q, which is the active model", ix.Shadow), "shadow cleared")
	default:
		return
	}
	if c.repair {
		ix.Shadow, c.changed = "", true
	}
}

// removals reports the files of deleted versions that a crash left
// behind; -repair removes them as start-up does.
func (c *checker) removals(ctx context.Context) error {
	if len(c.r.ix.Removing) == 0 {
		return nil
	}
	present, err := c.r.artifactNames(ctx)
	if err != nil {
		return fmt.Errorf("%w: list the model files: %w", store.ErrRegistry, err)
	}
	for _, rm := range c.r.ix.Removing {
		if present[rm.File] {
			c.find(rm.File, "file of a deleted version, not yet removed", "removed if unchanged since the delete (else adopted)")
		}
	}
	if c.repair {
		c.r.finishRemovals(ctx)
		c.changed = true
	}
	return nil
}

// orphanFiles reports model files without an entry; -repair adopts them
// or moves them to quarantine/.
func (c *checker) orphanFiles(ctx context.Context) error {
	for _, o := range c.r.orphans(ctx) {
		rel := o.Name
		problem := "model file without an index entry"
		if !o.Readable {
			problem = "symbolic link or special file in models/ (never followed)"
		}
		if !c.repair {
			c.find(rel, problem, "")
			continue
		}
		e, quarantined, err := c.r.adoptOrQuarantine(ctx, o)
		switch {
		case err == nil:
			c.changed = true
			c.find(rel, problem, "adopted as "+e.Version+" (archived)")
		case ctx.Err() != nil:
			return ctx.Err()
		case quarantined != "":
			c.find(rel, problem+": "+err.Error(), "moved to "+path.Dir(quarantined)+"/")
		default:
			c.find(rel, problem+": "+err.Error(), "")
		}
	}
	return nil
}

// String renders the report for the terminal.
func (c *CheckReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "registry %s: %d models in the index\n", c.Dir, c.Models)
	for _, f := range c.Findings {
		fmt.Fprintf(&b, "  %s: %s", f.File, f.Problem)
		if f.Repair != "" {
			fmt.Fprintf(&b, " [repaired: %s]", f.Repair)
		}
		b.WriteByte('\n')
	}
	switch n := c.Unrepaired(); {
	case len(c.Findings) == 0:
		b.WriteString("no problems found\n")
	case n == 0:
		fmt.Fprintf(&b, "%d problems found, all repaired\n", len(c.Findings))
	default:
		fmt.Fprintf(&b, "%d problems found, %d not repaired\n", len(c.Findings), n)
	}
	return b.String()
}
