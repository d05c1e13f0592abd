package fabricmap

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"time"
)

// Job colours are derived from the job's identity, never from its place
// in a list: a job keeps its colour for its lifetime while others come
// and go. The hue comes from a hash of the identity; saturation and
// lightness are fixed, so every job colour stands out against the greys
// of free and foreign NICs.
const (
	jobSaturation = 0.65
	jobLightness  = 0.45
)

// ColorOf returns the colour of the job with identity id (a PodGroup UID,
// or "namespace/name"), as "#rrggbb", on its own: a map gives its jobs
// colours that differ from each other (AssignColors).
func ColorOf(id string) string {
	return hslHex(hueOf(id), jobLightness)
}

// hueOf is the job's preferred hue, in degrees.
func hueOf(id string) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id)) // a hash.Hash never fails to write
	return float64(h.Sum32() % 360)
}

func hslHex(hueDeg, lightness float64) string {
	r, g, b := hslToRGB(hueDeg/360, jobSaturation, lightness)
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
}

// maxHueGap is the hue distance (degrees) two jobs of a map keep at least
// while the map has few enough jobs for it.
const maxHueGap = 24

// AssignColors gives each job of a map a colour no other job of it has,
// and keeps it recognisable: jobs are taken oldest first (by Created, then
// identity order), each at its
// own hue when no job before it is within the gap (24 degrees, less when
// the map has more than 15 jobs), else at the middle of the widest hue
// arc still free. Past 15 jobs the lightness alternates too, so jobs whose
// hues end up close still differ. A job keeps its colour while the older
// jobs whose hues are near its own stay: a job that joins the map never
// moves an older one (while there are few enough jobs for the gap).
func AssignColors(jobs []Job) {
	type entry struct {
		i       int
		id      string
		created time.Time
		hue     float64
	}
	var es []entry
	seen := map[string]bool{}
	for i, j := range jobs {
		id := j.ID
		if id == "" {
			id = j.Key
		}
		if seen[j.Key] {
			continue
		}
		seen[j.Key] = true
		es = append(es, entry{i: i, id: id, created: j.Created, hue: hueOf(id)})
	}
	sort.SliceStable(es, func(a, b int) bool {
		if !es[a].created.Equal(es[b].created) {
			return es[a].created.Before(es[b].created)
		}
		return es[a].id < es[b].id
	})
	gap := float64(maxHueGap)
	if n := len(es); n > 360/maxHueGap {
		gap = 360 / float64(n)
	}
	var taken []float64
	byKey := map[string]string{}
	for k, e := range es {
		hue := e.hue
		if len(taken) > 0 && nearest(taken, hue) < gap {
			hue = widestArcMiddle(taken)
		}
		taken = append(taken, hue)
		light := jobLightness
		if len(es) > 360/maxHueGap && k%2 == 1 {
			light = jobLightness + 0.15
		}
		byKey[jobs[e.i].Key] = hslHex(hue, light)
	}
	for i := range jobs {
		jobs[i].Colour = byKey[jobs[i].Key]
	}
}

// hueDist is the distance of two hues on the colour wheel.
func hueDist(a, b float64) float64 {
	d := math.Abs(a - b)
	return math.Min(d, 360-d)
}

// nearest is the distance from hue to the closest of hues.
func nearest(hues []float64, hue float64) float64 {
	best := 360.0
	for _, h := range hues {
		best = math.Min(best, hueDist(h, hue))
	}
	return best
}

// widestArcMiddle is the middle of the widest arc between the hues taken.
func widestArcMiddle(taken []float64) float64 {
	s := append([]float64(nil), taken...)
	sort.Float64s(s)
	bestLen, bestMid := -1.0, 0.0
	for i, h := range s {
		next := s[(i+1)%len(s)]
		length := next - h
		if length <= 0 {
			length += 360
		}
		if length > bestLen {
			bestLen, bestMid = length, math.Mod(h+length/2, 360)
		}
	}
	return bestMid
}

// hslToRGB converts hue, saturation and lightness in [0,1] to 8-bit RGB.
func hslToRGB(h, s, l float64) (uint8, uint8, uint8) {
	c := (1 - math.Abs(2*l-1)) * s
	hp := h * 6
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch {
	case hp < 1:
		r, g = c, x
	case hp < 2:
		r, g = x, c
	case hp < 3:
		g, b = c, x
	case hp < 4:
		g, b = x, c
	case hp < 5:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	to8 := func(v float64) uint8 { return uint8(math.Round((v + m) * 255)) }
	return to8(r), to8(g), to8(b)
}
