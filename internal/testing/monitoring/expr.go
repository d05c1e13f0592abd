package monitoring

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Expr is a parsed alert expression in the subset of PromQL the shipped
// alerts are restricted to, so that tests can evaluate them without a
// Prometheus server:
//
//	expr     := vector [cmp number]
//	vector   := selector
//	          | "absent" "(" selector ")"
//	          | ("min"|"max"|"sum") ["by" "(" label {"," label} ")"] "(" vector ")"
//	          | ("min_over_time"|"max_over_time"|"increase") "(" selector "[" duration "]" ")"
//	selector := name ["{" label ("="|"!=") string {"," ...} "}"]
//	cmp      := "==" | "!=" | ">" | "<" | ">=" | "<="
//
// Anything else is a parse error: an alert written in another form fails
// the checks rather than going unevaluated.
type Expr struct {
	root node
	// cmp and threshold filter the vector (cmp "" keeps it whole).
	cmp       string
	threshold float64
}

// node is one vector-valued part of an expression.
type node interface{ eval(h History) []Sample }

// selector picks series by name and label matchers; window > 0 makes it a
// range selector.
type selector struct {
	name     string
	matchers []matcher
	window   time.Duration
}

type matcher struct {
	label, value string
	negate       bool
}

// aggregate is min, max or sum, optionally by labels.
type aggregate struct {
	op  string
	by  []string
	arg node
}

// absent is 1 when its selector matches nothing.
type absent struct{ sel *selector }

// overTime is a function over a range selector.
type overTime struct {
	fn  string
	sel *selector
}

// ParseExpr parses an alert expression (see Expr).
func ParseExpr(s string) (*Expr, error) {
	p := &parser{src: s}
	p.toks = tokenize(s)
	root, err := p.vector()
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", s, err)
	}
	e := &Expr{root: root}
	if t := p.peek(); isCmp(t) {
		p.next()
		num, err := strconv.ParseFloat(p.next(), 64)
		if err != nil {
			return nil, fmt.Errorf("expression %q: %s needs a number: %w", s, t, err)
		}
		e.cmp, e.threshold = t, num
	}
	if t := p.peek(); t != "" {
		return nil, fmt.Errorf("expression %q: unexpected %q", s, t)
	}
	return e, nil
}

type parser struct {
	src  string
	toks []string
	pos  int
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	if t != "" {
		p.pos++
	}
	return t
}

func (p *parser) expect(t string) error {
	if got := p.next(); got != t {
		return fmt.Errorf("want %q, got %q", t, got)
	}
	return nil
}

func (p *parser) vector() (node, error) {
	name := p.next()
	switch name {
	case "absent":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		sel, err := p.selector(p.next())
		if err != nil {
			return nil, err
		}
		if sel.window > 0 {
			return nil, fmt.Errorf("absent takes an instant selector")
		}
		return &absent{sel: sel}, p.expect(")")
	case "min", "max", "sum":
		a := &aggregate{op: name}
		if p.peek() == "by" {
			p.next()
			if err := p.expect("("); err != nil {
				return nil, err
			}
			for {
				l := p.next()
				if !isIdent(l) {
					return nil, fmt.Errorf("by: want a label, got %q", l)
				}
				a.by = append(a.by, l)
				if p.peek() != "," {
					break
				}
				p.next()
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		arg, err := p.vector()
		if err != nil {
			return nil, err
		}
		a.arg = arg
		return a, p.expect(")")
	case "min_over_time", "max_over_time", "increase":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		sel, err := p.selector(p.next())
		if err != nil {
			return nil, err
		}
		if sel.window == 0 {
			return nil, fmt.Errorf("%s takes a range selector", name)
		}
		return &overTime{fn: name, sel: sel}, p.expect(")")
	}
	sel, err := p.selector(name)
	if err != nil {
		return nil, err
	}
	if sel.window > 0 {
		return nil, fmt.Errorf("range selector %s outside a function", name)
	}
	return sel, nil
}

func (p *parser) selector(name string) (*selector, error) {
	if !isIdent(name) {
		return nil, fmt.Errorf("want a metric name, got %q", name)
	}
	s := &selector{name: name}
	if p.peek() == "{" {
		p.next()
		for p.peek() != "}" {
			label, op, val := p.next(), p.next(), p.next()
			if !isIdent(label) || (op != "=" && op != "!=") || !strings.HasPrefix(val, `"`) {
				return nil, fmt.Errorf("%s: bad matcher %s%s%s", name, label, op, val)
			}
			v, err := strconv.Unquote(val)
			if err != nil {
				return nil, fmt.Errorf("%s: matcher %s: %w", name, label, err)
			}
			s.matchers = append(s.matchers, matcher{label: label, value: v, negate: op == "!="})
			if p.peek() == "," {
				p.next()
			}
		}
		p.next()
	}
	if p.peek() == "[" {
		p.next()
		d, err := time.ParseDuration(p.next())
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: bad range: %v", name, err)
		}
		s.window = d
		if err := p.expect("]"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// tokenize splits an expression into names, numbers, quoted strings,
// operators and punctuation.
func tokenize(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, s[i:min(j+1, len(s))])
			i = j + 1
		case strings.ContainsRune("=!<>", c):
			if i+1 < len(s) && s[i+1] == '=' {
				out = append(out, s[i:i+2])
				i += 2
			} else {
				out = append(out, s[i:i+1])
				i++
			}
		case strings.ContainsRune("(){}[],", c):
			out = append(out, string(c))
			i++
		default:
			j := i
			for j < len(s) && (isWordByte(s[j])) {
				j++
			}
			if j == i {
				j = i + 1
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b == '.' || b == ':' || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}

func isIdent(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) || s[i] == '.' {
			return false
		}
	}
	return true
}

func isCmp(t string) bool {
	switch t {
	case "==", "!=", ">", "<", ">=", "<=":
		return true
	}
	return false
}
