import CLibCrypto

/// One key that verifies JWT signatures of one algorithm: an HMAC secret (HS256), an RSA
/// public key of at least 2048 bits (RS256) or an EC public key on P-256 (ES256), optionally
/// named by a `kid`. The algorithm is fixed by the key's kind when it is loaded, never by a
/// token: that is what refuses algorithm confusion (an RSA public key used as an HMAC secret).
/// Equal when algorithm, `kid` and key (the secret, or the public key's DER) are.
///
/// Thread rules: immutable after `init`; libcrypto verifies with a context of its own per
/// call, so `verifies` is safe from any thread. Lifetime rule: owns its `EVP_PKEY`, freed in
/// `deinit`; held by the configuration that loaded it and the verifiers built from it.
package final class JWTKey: @unchecked Sendable, Equatable {
    package let algorithm: JWTAlgorithm
    /// The key's `kid`, when its source names one (a JWKS entry).
    package let id: String?
    /// Where it came from (`jwt_public_keys[1]`, `jwt_jwks_file keys[0]`), for messages.
    package let source: String
    /// The HMAC secret, or the public key's SubjectPublicKeyInfo DER: what equality compares.
    private let material: [UInt8]
    private let publicKey: OpaquePointer?

    package static let minimumSecretBytes = 32
    package static let minimumRSABits: Int32 = 2048

    /// An HS256 secret, at least `minimumSecretBytes` long (RFC 7518 §3.2: a key as long as the hash).
    package init(secret: [UInt8], source: String) throws(JWTKeyProblem) {
        guard secret.count >= Self.minimumSecretBytes else {
            throw JWTKeyProblem(
                "an HS256 secret must be at least \(Self.minimumSecretBytes) bytes (it has \(secret.count))")
        }
        algorithm = .hs256
        id = nil
        self.source = source
        material = secret
        publicKey = nil
    }

    /// Takes `key` (freed here on failure): RS256 for RSA, ES256 for P-256, else refused.
    private init(taking key: OpaquePointer, id: String?, source: String) throws(JWTKeyProblem) {
        let algorithm: JWTAlgorithm
        switch Int(runnel_pkey_kind(key)) {
        case Int(runnel_pkey_rsa):
            guard EVP_PKEY_get_bits(key) >= Self.minimumRSABits else {
                let bits = EVP_PKEY_get_bits(key)
                EVP_PKEY_free(key)
                throw JWTKeyProblem("an RSA key must have at least \(Self.minimumRSABits) bits (it has \(bits))")
            }
            algorithm = .rs256
        case Int(runnel_pkey_ec_p256): algorithm = .es256
        default:
            EVP_PKEY_free(key)
            throw JWTKeyProblem("not an RSA key or an EC key on P-256 (RS256 and ES256 are served)")
        }
        var der = [UInt8](repeating: 0, count: 4096)
        let length = runnel_pkey_der(key, &der, Int32(der.count))
        guard length > 0 else {
            EVP_PKEY_free(key)
            throw JWTKeyProblem("the public key cannot be encoded")
        }
        self.algorithm = algorithm
        self.id = id
        self.source = source
        material = Array(der[..<Int(length)])
        publicKey = key
    }

    /// The public key of a PEM text (`-----BEGIN PUBLIC KEY-----`).
    package convenience init(pem: [UInt8], source: String) throws(JWTKeyProblem) {
        guard let key = runnel_pkey_from_pem(pem, Int32(pem.count)) else {
            throw JWTKeyProblem("no PEM public key (-----BEGIN PUBLIC KEY-----) in it")
        }
        try self.init(taking: key, id: nil, source: source)
    }

    /// An RSA public key from a JWK's `n` and `e` (big-endian bytes).
    package convenience init(modulus: [UInt8], exponent: [UInt8], id: String?, source: String) throws(JWTKeyProblem) {
        guard !modulus.isEmpty, !exponent.isEmpty,
            let key = runnel_pkey_rsa_from(modulus, Int32(modulus.count), exponent, Int32(exponent.count))
        else { throw JWTKeyProblem("n and e are not an RSA public key") }
        try self.init(taking: key, id: id, source: source)
    }

    /// A P-256 public key from a JWK's `x` and `y` (32 big-endian bytes each), on the curve.
    package convenience init(x: [UInt8], y: [UInt8], id: String?, source: String) throws(JWTKeyProblem) {
        guard x.count == 32, y.count == 32, let key = runnel_pkey_p256_from(x, y) else {
            throw JWTKeyProblem("x and y are not a point of P-256")
        }
        try self.init(taking: key, id: id, source: source)
    }

    deinit { EVP_PKEY_free(publicKey) }

    /// Whether `signature` (the JWS signature's bytes) signs `input` (the token's
    /// `header.payload` text) under this key.
    package func verifies(_ signature: [UInt8], of input: Substring.UTF8View) -> Bool {
        var input = Array(input)
        switch algorithm {
        case .hs256:
            guard signature.count == 32 else { return false }
            return runnel_verify_hs256(material, Int32(material.count), signature, &input, input.count) == 1
        case .rs256:
            return runnel_verify_sha256(publicKey, signature, signature.count, &input, input.count) == 1
        case .es256:
            guard signature.count == 64 else { return false }
            return runnel_verify_es256(publicKey, signature, &input, input.count) == 1
        }
    }

    package static func == (left: JWTKey, right: JWTKey) -> Bool {
        left.algorithm == right.algorithm && left.id == right.id && left.material == right.material
    }
}

/// Why a configured JWT key cannot be used; the configuration names the key around it.
///
/// Thread rules: an immutable value. Lifetime rule: lives as long as the error is reported.
package struct JWTKeyProblem: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }
}
