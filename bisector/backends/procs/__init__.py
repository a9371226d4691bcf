"""The procs backend: a real kube-apiserver per candidate, hollow nodes as local processes."""
