package fabricmap

import (
	"fmt"
	"hash/fnv"
	"math"
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
// or "namespace/name"), as "#rrggbb".
func ColorOf(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id)) // a hash.Hash never fails to write
	hue := float64(h.Sum32()%360) / 360
	r, g, b := hslToRGB(hue, jobSaturation, jobLightness)
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
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
