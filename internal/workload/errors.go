package workload

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// InputError reports unusable input: the file, the object (kind and name,
// or the document index when the object cannot be named) and the field.
// Error() renders it as one line, fit for a CLI's stderr.
type InputError struct {
	// File is the input's name as the user gave it.
	File string
	// Doc is the 1-based YAML document index in File (0: the whole file).
	Doc int
	// Item is the 1-based index inside a List document (0: not in a List).
	Item int
	// Kind, Namespace and Name identify the object, when known.
	Kind      string
	Namespace string
	Name      string
	// Field is the JSON path of the offending field (e.g. spec.minMember),
	// empty when the problem is the document as a whole.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error renders "FILE: document N (Kind ns/name): FIELD: MSG", leaving out
// what is unknown.
func (e *InputError) Error() string {
	var where []string
	if e.Doc > 0 {
		doc := fmt.Sprintf("document %d", e.Doc)
		if e.Item > 0 {
			doc += fmt.Sprintf(" item %d", e.Item)
		}
		where = append(where, doc)
	}
	if obj := e.object(); obj != "" {
		where = append(where, "("+obj+")")
	}
	parts := []string{plain(e.File)}
	if len(where) > 0 {
		parts[0] += ": " + strings.Join(where, " ")
	}
	if e.Field != "" {
		parts = append(parts, plain(e.Field))
	}
	parts = append(parts, strings.Join(strings.Fields(e.Msg), " "))
	return strings.Join(parts, ": ")
}

// object renders "Kind ns/name", "Kind name" or "" when nothing is known.
func (e *InputError) object() string {
	kind, ns, name := plain(e.Kind), plain(e.Namespace), plain(e.Name)
	id := name
	if ns != "" && name != "" {
		id = ns + "/" + name
	}
	switch {
	case kind != "" && id != "":
		return kind + " " + id
	case kind != "":
		return kind
	default:
		return id
	}
}

// plain returns s as is, or quoted when it holds spaces or characters that
// are not printable (a kind or name taken from bad input may hold a line
// break), so that the error stays one readable line.
func plain(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// origin records where an object came from, so later (cross-object)
// validation can name it.
type origin struct {
	file string
	doc  int
	item int
}

// errorf builds an InputError for an object of this origin.
func (o origin) errorf(kind, namespace, name, field, format string, args ...any) *InputError {
	return &InputError{
		File: o.file, Doc: o.doc, Item: o.item,
		Kind: kind, Namespace: namespace, Name: name,
		Field: field, Msg: fmt.Sprintf(format, args...),
	}
}
