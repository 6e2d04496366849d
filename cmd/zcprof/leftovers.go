package main

import (
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/workload"
)

// removeLeftovers removes what dead zcprof runs left (namespaces named
// after a dead pid by earlier versions, payload files of a run killed
// while creating one, a tracefs or securityfs mount no zcprof uses) at the
// start of every command (run also removes the first two itself). Best effort: they are not
// this command's, and a user without the rights to remove them still gets
// the profile (run, which makes such things, fails instead).
func removeLeftovers() {
	workload.CleanupStale()
	removeStaleMounts()
}

// removeStaleMounts unmounts a tracefs or securityfs mount a dead zcprof
// made and no live one uses (serve too, which removes the rest itself
// and says so).
func removeStaleMounts() {
	pseudofs.RemoveStale(pseudofs.Tracefs)
	pseudofs.RemoveStale(pseudofs.Securityfs)
}
