package wire

import (
	"github.com/countersvc/countersvc/annotations"
	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/storage"
)

// buildAnnotations: texts on names and prefixes at a moment, kept in a
// table of their own (storage.AnnotationStore), served at /v1/annotations
// and beside history and breakdown answers (annotations=true). It has no
// settings and no jobs, and hears of no change: an annotation stays when
// its counter is deleted (docs/annotations.md).
func buildAnnotations(b *builder) (app.Capability, error) {
	return app.Annotations(annotations.NewService(storage.NewAnnotationStore(b.s.DB), b.now)), nil
}
