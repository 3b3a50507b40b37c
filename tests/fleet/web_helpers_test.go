package fleet

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// servedURL waits for a chunks process to log where it serves and returns
// that URL (http://host:port/).
func servedURL(t testing.TB, p *clitest.Proc) string {
	t.Helper()
	i := p.WaitLine(t, 0, 20*time.Second, "serving", "url=")
	m := regexp.MustCompile(`url=(\S+)`).FindStringSubmatch(p.Lines()[i])
	if m == nil {
		t.Fatalf("%s: no url in %q", p.Name, p.Lines()[i])
	}
	return m[1]
}

// response is what an HTTP request got.
type response struct {
	code   int
	header http.Header
	body   string
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

// fetch sends method url and reads the whole answer.
func fetch(t testing.TB, method, url string) response {
	t.Helper()
	return fetchAs(t, method, url, "")
}

// fetchAs is fetch with host as the request's Host header ("": the URL's
// host, as fetch sends).
func fetchAs(t testing.TB, method, url, host string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(body)}
}

// metrics scrapes url (a /metrics) and parses the text format.
func metrics(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	r := fetch(t, http.MethodGet, url)
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s\n%s", url, r.code, r.header.Get("Content-Type"), r.body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewBufferString(r.body))
	if err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, r.body)
	}
	return fams
}

// sample is the value of the series of name with exactly labels (name,
// value pairs): a counter's or gauge's value, a histogram's count. It fails
// the test when there is no such series.
func sample(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := len(got) == len(labels)/2
		for i := 0; match && i < len(labels); i += 2 {
			match = got[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return m.GetUntyped().GetValue()
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}
