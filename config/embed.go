// Package config holds the deployable configuration of rdmatopo: the
// Volcano scheduler conf, compiled into the binaries that need a default,
// and (as plain files next to this one) the ConfigMap, RBAC and kustomize
// manifests that install the scheduler.
package config

import (
	// Imported for its side effect: it enables the go:embed directive below.
	_ "embed"
)

//go:generate go run ./internal/syncconf

// SchedulerConfFile is the file name of the scheduler conf, both in this
// directory and as the key of the volcano-scheduler-configmap ConfigMap.
const SchedulerConfFile = "volcano-scheduler.conf"

// SchedulerConf is the content of volcano-scheduler.conf: the actions and
// plugin tiers rdmatopo is meant to run with. The rdmatopo CLI uses it when
// no --scheduler-conf is given.
//
//go:embed volcano-scheduler.conf
var SchedulerConf string
