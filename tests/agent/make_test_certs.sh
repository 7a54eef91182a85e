#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Creates throw-away PKI material for the agent's TLS tests in directory $1:
#   ca.pem/key           test CA
#   server.pem/key       signed by ca, SAN localhost + 127.0.0.1
#   client.pem/key       signed by ca (a controller)
#   other-ca.pem/key     an unrelated CA
#   other-client.pem/key signed by other-ca (must be refused)
set -eu
d=$1
cd "$d"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1.key" 2>/dev/null; }
ca() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # name ca cn extensions
  key "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3"
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" \
    -days 2 -extfile "$1.ext" 2>/dev/null
}
ca ca "srv6gw test CA"
ca other-ca "unrelated CA"
leaf server ca localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client ca controller-1 "extendedKeyUsage=clientAuth"
leaf other-client other-ca intruder "extendedKeyUsage=clientAuth"
