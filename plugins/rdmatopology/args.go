package rdmatopology

import (
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/pluginargs"
)

// Args are the typed, validated arguments of the plugin
// (core/pluginargs, which tools that read a scheduler conf without
// running it share).
type Args = pluginargs.Args

// ParseArgs decodes the plugin's arguments strictly (pluginargs.Parse): an
// unknown key or a value of the wrong type is an error naming the key.
func ParseArgs(in framework.Arguments) (*Args, error) {
	return pluginargs.Parse(in)
}
