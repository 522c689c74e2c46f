"""Writes a throw-away certificate authority and a server certificate it signed, for the
https tests (python `cryptography`, installed with the peers).

Usage: python3 tls_certs.py OUTDIR

Writes OUTDIR/ca.pem (the CA certificate), OUTDIR/server.pem and OUTDIR/server.key (for
127.0.0.1 and localhost). Nothing is valid for longer than a day.
"""

import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

out = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc)
start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)


def name(text):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def write(filename, data):
    with open(os.path.join(out, filename), "wb") as f:
        f.write(data)


ca_key = ec.generate_private_key(ec.SECP256R1())
ca = (
    x509.CertificateBuilder()
    .subject_name(name("agent-tools test CA"))
    .issuer_name(name("agent-tools test CA"))
    .public_key(ca_key.public_key())
    .serial_number(x509.random_serial_number())
    .not_valid_before(start)
    .not_valid_after(end)
    .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
    .add_extension(
        x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                      content_commitment=False, key_encipherment=False, data_encipherment=False,
                      key_agreement=False, encipher_only=False, decipher_only=False),
        critical=True)
    .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
    .sign(ca_key, hashes.SHA256())
)

key = ec.generate_private_key(ec.SECP256R1())
server = (
    x509.CertificateBuilder()
    .subject_name(name("127.0.0.1"))
    .issuer_name(ca.subject)
    .public_key(key.public_key())
    .serial_number(x509.random_serial_number())
    .not_valid_before(start)
    .not_valid_after(end)
    .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    .add_extension(
        x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
        critical=False)
    .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    .add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    .sign(ca_key, hashes.SHA256())
)

write("ca.pem", ca.public_bytes(serialization.Encoding.PEM))
write("server.pem", server.public_bytes(serialization.Encoding.PEM))
write("server.key", key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
