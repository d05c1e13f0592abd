package monitoring

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Rule is one alerting rule of a PrometheusRule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// PrometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule
// the checks read.
type PrometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// Alert is a rule with its expression parsed.
type Alert struct {
	Rule
	Parsed *Expr
}

// LoadAlerts reads a PrometheusRule file and parses every alert's
// expression; an expression outside the subset Expr evaluates is an
// error naming the alert.
func LoadAlerts(file string) ([]Alert, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pr PrometheusRule
	if err := yaml.Unmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q, want a monitoring.coreos.com/v1 PrometheusRule", file, pr.APIVersion, pr.Kind)
	}
	var out []Alert
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			e, err := ParseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("%s: alert %s: %w", file, r.Alert, err)
			}
			out = append(out, Alert{Rule: r, Parsed: e})
		}
	}
	return out, nil
}
