"""TLS: the client's ``ssl.SSLContext``, built from the connection string's TLS options.

Specs: URI Options ("tls", "tlsCAFile", "tlsCertificateKeyFile",
"tlsCertificateKeyFilePassword", "tlsAllowInvalidCertificates",
"tlsAllowInvalidHostnames", "tlsInsecure", "tlsDisableOCSPEndpointCheck",
"tlsDisableCertificateRevocationCheck"); Initial DNS Seedlist Discovery (mongodb+srv
turns TLS on, see :meth:`mongocore.core.options.ClientOptions.from_uri`); OCSP Support
(what the two revocation options mean when no revocation check is made).

What is verified by default: the server's certificate chain, against the CAs of
``tlsCAFile`` or else the system's trust store, and that the certificate names the
host being connected to (DNS name or IP address, through Python's own matching);
TLS 1.2 is the lowest version offered. ``tlsAllowInvalidHostnames`` stops the name
check only; ``tlsAllowInvalidCertificates`` stops both (the connection is encrypted
but the server is not authenticated); ``tlsInsecure`` is both.

The standard library makes no OCSP request and checks no revocation list, so
``tlsDisableOCSPEndpointCheck`` and ``tlsDisableCertificateRevocationCheck`` are
accepted and change nothing.

The files are read when the context is built (when a client is created), so a wrong
path or a wrong key password fails at once with a ConfigurationError that names the
option and the file, never the password.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Optional

from mongocore.errors import ConfigurationError

if TYPE_CHECKING:
    from mongocore.core.options import ClientOptions

__all__ = ["create_ssl_context", "ssl_context_for"]


def create_ssl_context(
    *,
    ca_file: Optional[str] = None,
    certificate_key_file: Optional[str] = None,
    certificate_key_file_password: Optional[str] = None,
    allow_invalid_certificates: bool = False,
    allow_invalid_hostnames: bool = False,
) -> ssl.SSLContext:
    """A client-side TLS context with the given trust, client certificate and checks."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca_file is not None:
        try:
            context.load_verify_locations(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(
                f"tlsCAFile: could not load CA certificates from {ca_file!r}: {_reason(exc)}"
            ) from None
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if certificate_key_file is not None:
        _load_client_certificate(context, certificate_key_file, certificate_key_file_password)
    if allow_invalid_certificates:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif allow_invalid_hostnames:
        context.check_hostname = False
    return context


def _load_client_certificate(context: ssl.SSLContext, path: str, password: Optional[str]) -> None:
    # Without a password, an encrypted key must fail rather than make OpenSSL prompt
    # on the terminal: the callback answers with nothing.
    secret: object = password if password is not None else (lambda: b"")
    try:
        context.load_cert_chain(path, password=secret)  # type: ignore[arg-type]
    except FileNotFoundError:
        raise ConfigurationError(f"tlsCertificateKeyFile: no such file {path!r}") from None
    except (OSError, ssl.SSLError, ValueError) as exc:
        hint = (
            "; the key is encrypted or not in the file: check tlsCertificateKeyFilePassword"
            if "PEM" in str(exc) or "password" in str(exc).lower()
            else ""
        )
        # The exception is not chained: nothing of the password may travel with it.
        raise ConfigurationError(
            f"tlsCertificateKeyFile: could not load the certificate and private key from"
            f" {path!r}: {_reason(exc)}{hint}"
        ) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return f"{exc.library or 'SSL'}: {exc.reason}"
    return str(exc) or exc.__class__.__name__


def ssl_context_for(options: ClientOptions) -> Optional[ssl.SSLContext]:
    """The TLS context a client's options ask for, or None when TLS is off.

    ``tlsInsecure`` has already set the options it implies (ClientOptions.from_uri).
    """
    if not options.tls:
        return None
    return create_ssl_context(
        ca_file=options.tls_ca_file,
        certificate_key_file=options.tls_certificate_key_file,
        certificate_key_file_password=options.tls_certificate_key_file_password,
        allow_invalid_certificates=options.tls_allow_invalid_certificates or options.tls_insecure,
        allow_invalid_hostnames=options.tls_allow_invalid_hostnames or options.tls_insecure,
    )
