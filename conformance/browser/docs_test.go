package browser

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"ramanserve/api"
	"ramanserve/gen"
)

// TestDocsPageInChromium: GET /docs renders the contract in headless
// Chromium under the policy it is served with: every operation of the
// contract has its section, nothing is fetched but the page itself, and
// the browser reports no console error, exception or policy violation.
func TestDocsPageInChromium(t *testing.T) {
	browserPath := chromiumOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	base, _ := startServer(t)
	url := base + "/docs"
	csp, size := docsHeaders(ctx, t, url)
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'sha256-") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("GET /docs: Content-Security-Policy %q; want default-src 'none' and scripts by hash only", csp)
	}

	doc, err := gen.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var wantOps int
	for _, item := range doc.Paths.Map() {
		wantOps += len(item.Operations())
	}

	events := &pageEvents{}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.NoSandbox, // the test may run as root (CI containers)
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "en-US"),
	)...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(events.add))
	defer cancelTab()

	// Redoc renders after its script has parsed the contract; the last
	// operation's section is there once the whole page is.
	if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitReady(`[id="operation/getDocs"]`)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	counts, err := chromedp.Run(tab, chromedp.Evaluate[map[string]int](`(() => ({
  operations: new Set([...document.querySelectorAll('[id^="operation/"]')].map(e => e.id)).size,
  tags: new Set([...document.querySelectorAll('[id^="tag/"]')].map(e => e.id).filter(id => !id.includes("/", 4))).size,
  examples: document.querySelectorAll('[role="tabpanel"], .redoc-json').length,
  textLength: document.body.innerText.length,
  roles: document.getElementById("redoc").innerText.split("Role (with -auth-tokens)").length - 1,
}))()`))
	if err != nil {
		t.Fatalf("count the sections: %v", err)
	}
	if counts["operations"] != wantOps {
		t.Errorf("the page has %d operation sections; the contract has %d operations", counts["operations"], wantOps)
	}
	if counts["tags"] != len(doc.Tags) {
		t.Errorf("the page has %d tag sections; the contract has %d tags", counts["tags"], len(doc.Tags))
	}
	if counts["roles"] < wantOps {
		t.Errorf("the page names the role needed %d times; the contract has %d operations", counts["roles"], wantOps)
	}
	if !strings.Contains(api.OpenAPIYAML(), "title: ramanserve") || counts["textLength"] < 10_000 {
		t.Errorf("the page shows %d characters of text", counts["textLength"])
	}
	for msg := range events.problems() {
		t.Errorf("browser reported: %s", msg)
	}
	var fetched int
	for _, u := range events.requestedURLs() {
		switch {
		case u == url:
		case strings.HasPrefix(u, "data:"): // inline images: nothing leaves the page
		default:
			fetched++
			t.Errorf("the page requested %s; it must fetch nothing but itself", u)
		}
	}
	t.Logf("docs page: %d bytes; %d of %d operations and %d of %d tags rendered, the role shown %d times, %d example panels, %d console errors or violations, %d fetches beyond the page",
		size, counts["operations"], wantOps, counts["tags"], len(doc.Tags), counts["roles"], counts["examples"], len(events.errors), fetched)
}

// docsHeaders fetches url once over HTTP and returns its
// Content-Security-Policy and its size.
func docsHeaders(ctx context.Context, t *testing.T, url string) (string, int64) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %d %s %v", url, resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	return resp.Header.Get("Content-Security-Policy"), n
}
