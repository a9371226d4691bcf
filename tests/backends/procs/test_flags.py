"""Each process's command line (bisector/backends/procs/flags.py): the 2017 apiserver's
flags, a modern one served securely with generated credentials."""

from __future__ import annotations

from pathlib import Path

from bisector.backends.procs import cluster as pc
from bisector.backends.procs import flags as pf
from tests.helpers.procs_backend import cluster_layout, procs_settings


def test_a_2017_apiserver_gets_the_flags_measured_for_1_7(tmp_path: Path) -> None:
    args = pf.apiserver_cmd(
        procs_settings(), Path("/b/kube-apiserver"), cluster_layout(tmp_path, False)
    )
    # As run by hand on kubernetes 7043372 (healthy in ~1 s).
    for flag in ("--insecure-bind-address=127.0.0.1", "--insecure-port=6443", "--secure-port=0",
                 "--storage-backend=etcd3", "--admission-control=AlwaysAdmit",
                 "--authorization-mode=AlwaysAllow", "--v=3"):  # fmt: skip
        assert flag in args
    assert not any("token" in a for a in args)


def test_a_modern_apiserver_is_served_securely_with_generated_credentials(tmp_path: Path) -> None:
    layout = cluster_layout(tmp_path, True)
    token = pc.write_credentials(layout)
    args = pf.apiserver_cmd(procs_settings(apiserver_args=["--x=1"]), Path("/b/a"), layout)
    c = layout.credentials
    for flag in (
        "--secure-port=6443",
        f"--tls-cert-file={c.cert}",
        f"--token-auth-file={c.token_file}",
        f"--service-account-signing-key-file={c.sa_key}",
        "--bind-address=127.0.0.1",
    ):
        assert flag in args
    assert args[-1] == "--x=1" and not any("insecure" in a for a in args)
    assert c.token_file.read_text().startswith(f"{token},bisector,bisector,system:masters")
    assert all(p.stat().st_mode & 0o077 == 0 for p in (c.key, c.sa_key, c.token_file))
    config = pc.kubeconfig_text(layout, token)
    assert 'server: "https://127.0.0.1:6443"' in config and str(c.ca) in config and token in config
    load = pf.load_cmd(procs_settings(watchers=3), layout)
    assert load[load.index("--ca-file") + 1] == str(c.ca)
