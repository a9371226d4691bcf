"""The serving credentials (bisector/backends/procs/pki.py)."""

from __future__ import annotations

import ssl

from cryptography import x509

from bisector.backends.procs.pki import make_pki


def test_the_serving_certificate_is_for_loopback_and_signed_by_the_ca() -> None:
    pki = make_pki()
    ca = x509.load_pem_x509_certificate(pki.ca_pem)
    cert = x509.load_pem_x509_certificate(pki.cert_pem)
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    context = ssl.create_default_context(cadata=pki.ca_pem.decode())
    assert context.cert_store_stats()["x509_ca"] == 1
