//go:build ignore

// gen_widths writes widths.bin.gz and LICENSE-anafanafo.txt from the npm
// package anafanafo, the text widths shields.io's badge-maker measures badges
// with. Run it with `go generate ./app/badge` (it needs npm and the npm
// registry).
//
// widths.bin.gz is gzip over the tables of fonts, in this order: Verdana
// 11px, Verdana 10px, Verdana bold 10px. A table is a uvarint count of
// ranges, then for each range three uvarints: its first code point less the
// previous range's last code point plus one (the first range: its first code
// point), its last code point less its first, and the width of each of its
// code points in hundredths of a pixel (anafanafo gives two decimals).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
)

// version is the anafanafo that badge-maker 6.0.0 depends on.
const version = "2.0.0"

var fonts = []string{"verdana-11px-normal", "verdana-10px-normal", "verdana-10px-bold"}

func main() {
	files, err := unpack()
	if err != nil {
		log.Fatal(err)
	}
	var raw bytes.Buffer
	for _, font := range fonts {
		data, ok := files["package/data/"+font+".json"]
		if !ok {
			log.Fatalf("anafanafo %s has no data/%s.json", version, font)
		}
		if err := encode(&raw, data); err != nil {
			log.Fatalf("%s: %v", font, err)
		}
	}
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression) // a valid level never fails
	zw.Write(raw.Bytes())
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("widths.bin.gz", out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	license := "The text widths in widths.bin.gz are converted from the npm package\n" +
		"anafanafo " + version + " (https://github.com/metabolize/anafanafo), data/\n" +
		strings(fonts) + ", under this licence:\n\n" + string(files["package/LICENSE"])
	if err := os.WriteFile("LICENSE-anafanafo.txt", []byte(license), 0o644); err != nil {
		log.Fatal(err)
	}
}

func strings(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n + ".json"
	}
	return s
}

// unpack fetches the package with npm pack, which checks the tarball against
// the registry's integrity hash, and returns its files by path.
func unpack() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "anafanafo")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("npm", "pack", "--silent", "--pack-destination", dir, "anafanafo@"+version)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("npm pack anafanafo@%s: %w", version, err)
	}
	f, err := os.Open(filepath.Join(dir, "anafanafo-"+version+".tgz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// encode appends one table: anafanafo's JSON is [[first, last, width], ...],
// sorted and without overlaps.
func encode(w *bytes.Buffer, data []byte) error {
	var ranges [][3]float64
	if err := json.Unmarshal(data, &ranges); err != nil {
		return err
	}
	w.Write(binary.AppendUvarint(nil, uint64(len(ranges))))
	next := 0.0
	for _, r := range ranges {
		first, last, width := r[0], r[1], r[2]
		hundredths := math.Round(width * 100)
		if first < next || last < first || first != math.Trunc(first) || last != math.Trunc(last) ||
			width < 0 || hundredths/100 != width {
			return fmt.Errorf("range %v is out of order or not whole code points and a width of two decimals", r)
		}
		for _, v := range []float64{first - next, last - first, hundredths} {
			w.Write(binary.AppendUvarint(nil, uint64(v)))
		}
		next = last + 1
	}
	return nil
}
