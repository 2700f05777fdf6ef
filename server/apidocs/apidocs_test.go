package apidocs

import (
	"regexp"
	"strings"
	"testing"
)

// TestPageScriptsMatchThePolicy: the page has the contract as a data
// block and two scripts, each admitted by its hash in the policy and by
// nothing else; a contract string that looks like a closing tag stays
// inside the data block.
func TestPageScriptsMatchThePolicy(t *testing.T) {
	page, err := New([]byte(`{"openapi":"3.0.3","info":{"title":"t</script><script>alert(1)</script><!--","version":"1"},"paths":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page.HTML)
	elements := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1)
	if len(elements) != 3 {
		t.Fatalf("the page has %d script elements, want 3 (the contract, Redoc, its init)", len(elements))
	}
	if elements[0][1] != ` type="application/json" id="contract"` || !strings.Contains(elements[0][2], `t\u003c/script>`) {
		t.Errorf("the contract's data block is %q", elements[0][1])
	}
	var hashes []string
	for _, el := range elements[1:] {
		if el[1] != "" {
			t.Errorf("script element with attributes %q", el[1])
		}
		h := scriptHash(el[2])
		hashes = append(hashes, h)
		if !strings.Contains(page.ContentSecurityPolicy, "script-src "+hashes[0]) || !strings.Contains(page.ContentSecurityPolicy, h) {
			t.Errorf("the policy does not admit a script of the page (%s): %s", h, page.ContentSecurityPolicy)
		}
	}
	if strings.Count(page.ContentSecurityPolicy, "'sha256-") != 2 {
		t.Errorf("the policy admits other scripts: %s", page.ContentSecurityPolicy)
	}
	if strings.Contains(html, redocLogoURL) {
		t.Errorf("the page still names %s", redocLogoURL)
	}
}

func TestNotJSONRefused(t *testing.T) {
	if _, err := New([]byte(`openapi: 3.0.3`)); err == nil {
		t.Fatal("a contract that is not JSON was accepted")
	}
}
