import Foundation

/// A CA, a server certificate for localhost signed by it, and an unrelated CA, made by `openssl`
/// in a temporary directory that is removed with this value.
///
/// Thread rules: immutable after `init`, any thread. Lifetime rule: the directory is removed on
/// deinit.
public final class TestCertificates: Sendable {
    public let directory: URL

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("runnel-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"]
        for name in ["ca", "other-ca"] {
            try openssl(
                ["req", "-x509"] + curve + ["-subj", "/CN=\(name)", "-keyout", "\(name).key", "-out", "\(name).pem"])
        }
        try openssl(
            ["req", "-x509"] + curve + [
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-addext", "basicConstraints=CA:FALSE", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-keyout", "server.key", "-out", "server.pem",
            ])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestCertificateError(arguments: arguments) }
    }
}

/// An `openssl` command that failed. Thread rules: a value. Lifetime rule: none.
public struct TestCertificateError: Error {
    public let arguments: [String]
}
