package fabricmap

import (
	"fmt"
	"testing"
	"time"
)

// TestAssignColors: every job of a map gets a colour no other job of it
// has, far apart on the wheel while the map has few jobs, and a job alone
// keeps the colour of its identity.
func TestAssignColors(t *testing.T) {
	for _, n := range []int{1, 2, 6, 15, 16, 40, 120} {
		t.Run(fmt.Sprintf("%d jobs", n), func(t *testing.T) {
			jobs := make([]Job, n)
			for i := range jobs {
				jobs[i] = Job{Key: fmt.Sprintf("ns/job-%d", i), ID: fmt.Sprintf("uid-%04d-%d", i*7919%1000, i)}
			}
			AssignColors(jobs)
			seen := map[string]string{}
			for _, j := range jobs {
				if j.Colour == "" {
					t.Fatalf("%s has no colour", j.Key)
				}
				if other, dup := seen[j.Colour]; dup {
					t.Errorf("%s and %s share %s", j.Key, other, j.Colour)
				}
				seen[j.Colour] = j.Key
			}
			if n == 1 && jobs[0].Colour != ColorOf(jobs[0].ID) {
				t.Errorf("a job alone has %s, its own colour is %s", jobs[0].Colour, ColorOf(jobs[0].ID))
			}
		})
	}
	// Two identities whose hashed hues coincide still differ.
	var a, b string
	hues := map[float64]string{}
	for i := 0; a == ""; i++ {
		id := fmt.Sprintf("pg-%d", i)
		if prev, ok := hues[hueOf(id)]; ok {
			a, b = prev, id
		}
		hues[hueOf(id)] = id
	}
	jobs := []Job{{Key: "ns/a", ID: a}, {Key: "ns/b", ID: b}}
	AssignColors(jobs)
	if jobs[0].Colour == jobs[1].Colour || hueDist(hueOfHex(t, jobs[0].Colour), hueOfHex(t, jobs[1].Colour)) < maxHueGap-1 {
		t.Errorf("same-hue identities %s, %s got %s and %s", a, b, jobs[0].Colour, jobs[1].Colour)
	}
}

// hueOfHex is the hue (degrees) of "#rrggbb".
func hueOfHex(t *testing.T, hex string) float64 {
	t.Helper()
	var r, g, b int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		t.Fatal(err)
	}
	rf, gf, bf := float64(r)/255, float64(g)/255, float64(b)/255
	mx, mn := max(rf, gf, bf), min(rf, gf, bf)
	d := mx - mn
	var h float64
	switch {
	case d == 0:
		return 0
	case mx == rf:
		h = 60 * ((gf - bf) / d)
	case mx == gf:
		h = 60 * ((bf-rf)/d + 2)
	default:
		h = 60 * ((rf-gf)/d + 4)
	}
	if h < 0 {
		h += 360
	}
	return h
}

// TestAssignColorsOlderJobsKeepTheirs: a job that joins a map never moves
// an older one, whichever identity sorts first: of two jobs whose hues
// coincide, the older keeps the colour of its identity, in either order.
func TestAssignColorsOlderJobsKeepTheirs(t *testing.T) {
	var a, b string
	hues := map[float64]string{}
	for i := 0; a == ""; i++ {
		id := fmt.Sprintf("pg-%d", i)
		if prev, ok := hues[hueOf(id)]; ok {
			a, b = prev, id
		}
		hues[hueOf(id)] = id
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, older := range []string{a, b} {
		younger := a
		if older == a {
			younger = b
		}
		jobs := []Job{{Key: "ns/" + younger, ID: younger, Created: t0.Add(time.Minute)}, {Key: "ns/" + older, ID: older, Created: t0}}
		AssignColors(jobs)
		if jobs[1].Colour != ColorOf(older) {
			t.Errorf("older job %s has %s beside %s, want its own %s", older, jobs[1].Colour, younger, ColorOf(older))
		}
		if jobs[0].Colour == jobs[1].Colour {
			t.Errorf("%s and %s share %s", older, younger, jobs[0].Colour)
		}
	}
}
