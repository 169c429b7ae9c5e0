package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// call sends one request to the service and returns the answer's body; an
// answer other than want is an error. headers are "Name: value" pairs.
func call(ctx context.Context, client *http.Client, method, url, body string, want int, headers ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	return b, nil
}

func (b *bench) call(method, url string, want int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return call(ctx, b.client, method, url, "", want)
}

// metrics reads the service's /metrics and returns the value of each
// series, summed over the labels the series leaves out (0 for a series
// the service has not exported yet).
func (b *bench) metrics(url string, series ...string) ([]float64, error) {
	body, err := b.call("GET", url+"/metrics", http.StatusOK)
	if err != nil {
		return nil, err
	}
	sums := make([]float64, len(series))
	for _, line := range strings.Split(string(body), "\n") {
		for i, s := range series {
			rest, ok := strings.CutPrefix(line, s)
			if !ok || rest == "" || rest[0] != ' ' && rest[0] != '{' {
				continue
			}
			f := strings.Fields(rest)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return nil, fmt.Errorf("metrics of %s: %q: %w", url, line, err)
			}
			sums[i] += v
		}
	}
	return sums, nil
}
