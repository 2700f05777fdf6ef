package report

import "html/template"

// pagePolicy is the Content Security Policy the page states itself (a
// saved copy keeps it): nothing may be loaded and nothing may run; only
// the page's own inline styles and data: images apply.
const pagePolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// ContentSecurityPolicy is the policy the page is served with: the page's
// own, plus frame-ancestors, which browsers take from a header only (in a
// <meta> element it is ignored with a console error).
const ContentSecurityPolicy = pagePolicy + "; frame-ancestors 'none'"

// pageStyle is the style sheet of every page of the package, inline.
const pageStyle = `body{font-family:"Liberation Sans",Arial,Helvetica,"DejaVu Sans Condensed",sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em}
h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.8em}
.sub{color:#555;margin-top:0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));gap:1em}
figure{margin:0;border:1px solid #e2e2e2;border-radius:4px;padding:.3em;background:#fff}
figure svg{width:100%;height:auto;display:block}
figure svg text{font-family:"Liberation Sans",Arial,Helvetica,"DejaVu Sans Condensed",sans-serif!important}
#t2-q figure,#vip figure,#weights-loadings figure,#spectra figure{max-width:1000px}
#scores figure{max-width:640px}
figcaption{font-size:.85em;color:#555;text-align:center}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.out td.num.n{background:#fde2e2;font-weight:bold}
tr.chosen td,tr.this td{background:#fff3d6;font-weight:bold}
.missing{background:#fff6e0;border:1px solid #e8c36a;padding:.6em 1em;border-radius:4px}
.note{color:#555;font-size:.9em}
code,.id{font-family:monospace;word-break:break-all}
`

// Section ids of the page; the browser test counts the plots in each.
const (
	SectionCV        = "cv-curve"
	SectionMeasured  = "measured-predicted"
	SectionResiduals = "residuals"
	SectionVectors   = "regression-vectors"
	SectionT2Q       = "t2-q"
	SectionOutliers  = "outliers"
	SectionLineage   = "lineage"
	SectionRecipe    = "recipe"
	// SectionLab holds lab against predicted and the bias control charts.
	SectionLab = "lab-performance"
)

// pageHead opens every page of the package: its own policy, its style
// sheet, and the title.
const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{csp}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{style}}</style>
</head>
<body>
`

// newPage parses a page of the package: pageHead, then body.
func newPage(name, body string) *template.Template {
	return template.Must(template.New(name).Funcs(template.FuncMap{
		"csp":   func() string { return pagePolicy },
		"style": func() template.CSS { return pageStyle },
	}).Parse(pageHead + body))
}

var pageTemplate = newPage("page", `<header>
<h1>{{.Title}}</h1>
<p class="sub">Status <strong>{{.Status}}</strong>{{with .Algorithm}} · {{.}}{{end}}{{with .Targets}} · {{.}}{{end}}</p>
</header>
<section id="summary">
<table>{{range .Summary}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>
</section>
{{if .Missing}}<section id="missing" class="missing">
<strong>Not in this model's file</strong>
<ul>{{range .Missing}}<li>{{.}}</li>{{end}}</ul>
</section>{{end}}
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
{{if or .CV .Selection}}<section id="cv-curve">
<h2>Cross-validation curve</h2>
{{if .Selection}}<table>{{range .Selection}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
<div class="grid">{{range .CV}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
{{with .CVTable}}<table><tr><th>components</th>{{range .Targets}}<th>RMSECV {{.}}</th>{{end}}<th>score</th></tr>
{{range .Rows}}<tr{{if .Chosen}} class="chosen"{{end}}><td class="num">{{.Components}}</td>{{range .RMSECV}}<td class="num">{{.}}</td>{{end}}<td class="num">{{.Score}}</td></tr>
{{end}}</table>{{if .More}}<p class="note">and {{.More}} more counts</p>{{end}}{{end}}
</section>{{end}}
{{with .Lab}}<section id="lab-performance">
<h2>Against the lab</h2>
{{if .Unavailable}}<p class="missing">{{.Unavailable}}</p>
{{else if not .Summary}}<p>No lab result is matched to a spectrum this version predicted on yet (as the active model, the shadow or a re-scoring job). Post the lab's HPLC results to <code>POST /lab-results</code>.</p>
{{else}}<p>{{.Summary}}</p>
{{with .Table}}<table><tr><th>version</th><th>as</th><th>analyte</th><th>n</th><th>RMSEP (g/L)</th><th>bias (g/L)</th><th>slope</th><th>intercept (g/L)</th></tr>
{{range .Rows}}<tr{{if .This}} class="this"{{end}}><td class="id">{{.Version}}</td><td>{{.Roles}}</td><td>{{.Analyte}}</td><td class="num">{{.N}}</td><td class="num">{{.RMSEP}}</td><td class="num">{{.Bias}}</td><td class="num">{{.Slope}}</td><td class="num">{{.Intercept}}</td></tr>
{{end}}</table>{{if .More}}<p class="note">and {{.More}} more versions</p>{{end}}{{end}}
<h3>Lab against predicted</h3>
<div class="grid">{{range .Scatter}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
<h3>Bias by batch</h3>
<div class="grid">{{range .Control}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
{{end}}{{range .Notes}}<p class="note">{{.}}</p>{{end}}
</section>{{end}}
{{with .Components}}<section id="components">
<h2>Components</h2>
<p class="note">R²X: share of the X sum of squares (preprocessed, centred, scaled as the model does) each component explains; R²Y: cumulative, of the calibration fit; Q²: 1 − PRESS/SS of the cross-validated predictions. The model's count is highlighted.</p>
<table><tr><th>components</th><th>R²X</th><th>R²X cumulative</th>{{range .Targets}}<th>R²Y {{.}}</th>{{end}}{{range .Targets}}<th>Q² {{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Chosen}} class="chosen"{{end}}><td class="num">{{.Components}}</td><td class="num">{{.R2X}}</td><td class="num">{{.R2XCumulative}}</td>{{range .R2Y}}<td class="num">{{.}}</td>{{end}}{{range .Q2}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table>
</section>{{end}}
{{if .Measured}}<section id="measured-predicted">
<h2>Measured against cross-validated predicted</h2>
<div class="grid">{{range .Measured}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
</section>{{end}}
{{if .Residuals}}<section id="residuals">
<h2>Residuals</h2>
<div class="grid">{{range .Residuals}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
</section>{{end}}
{{if .Spectra}}<section id="spectra">
<h2>Spectra before and after the recipe</h2>
{{range .Spectra}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
</section>{{end}}
<section id="regression-vectors">
<h2>Regression vectors</h2>
{{if .Vectors}}<div class="grid">{{range .Vectors}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
{{else}}<p class="missing">The model's file holds no finite coefficients to draw.</p>{{end}}
</section>
{{with .Scores}}<section id="scores">
<h2>Scores</h2>
<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
</section>{{end}}
{{if .Weights}}<section id="weights-loadings">
<h2>X weights and loadings</h2>
{{range .Weights}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
</section>{{end}}
{{with .VIP}}<section id="vip">
<h2>Variable importance</h2>
<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
</section>{{end}}
{{with .T2Q}}<section id="t2-q">
<h2>T² against Q</h2>
<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
</section>{{end}}
{{if .Influence}}<section id="influence">
<h2>Influence</h2>
<div class="grid">{{range .Influence}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
</section>{{end}}
{{with .Outliers}}<section id="outliers">
<h2>Outliers</h2>
{{if .Rows}}<p class="note">{{.Total}} training spectra beyond the 95 % T² or Q limit, or with a studentised label residual above 3; the most extreme first.</p>
<table><tr><th>scan id</th><th>T²</th><th>Q</th>{{range .Targets}}<th>stud. res. {{.}}</th>{{end}}<th>beyond</th></tr>
{{range .Rows}}<tr><td class="id">{{.ScanID}}</td><td class="num">{{.T2}}</td><td class="num">{{.Q}}</td>{{range .Studentized}}<td class="num">{{.}}</td>{{end}}<td>{{.Why}}</td></tr>
{{end}}</table>{{if .More}}<p class="note">and {{.More}} more</p>{{end}}
{{else}}<p>No training spectrum is beyond a limit.</p>{{end}}
</section>{{end}}
<section id="recipe">
<h2>Preprocessing and regions</h2>
{{if .Recipe}}<table><tr><th>#</th><th>step</th><th>parameters</th></tr>
{{range .Recipe}}<tr><td class="num">{{.N}}</td><td><code>{{.Step}}</code></td><td>{{.Params}}</td></tr>
{{end}}</table>{{else}}<p>No preprocessing: the model uses raw intensities.</p>{{end}}
<table>{{range .Regions}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>
</section>
<section id="lineage">
<h2>Lineage</h2>
<table>{{range .Lineage}}<tr><th>{{.Key}}</th><td class="id">{{.Value}}</td></tr>{{end}}</table>
</section>
</body>
</html>
`)
