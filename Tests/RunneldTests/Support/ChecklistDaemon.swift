import Foundation
import RunnelTestSupport

/// A runneld for the Swift client's checklist (docs/clients.md), configured as the Python and
/// JavaScript clients' checks are (`Tests/blackbox/client_checklist.py`): a config written as
/// TOML text, the TLS port read from its log, and `restart()` on the same ports and data directory
/// after a SIGKILL.
///
/// Thread rules: owned by one test; not thread-safe. Lifetime rule: the daemon is killed and
/// its directory removed on deinit.
final class ChecklistDaemon {
    static let token = "client-token"
    /// `expiry`: the HS256 secret of the JWTs the checks sign.
    static let jwtSecret = "client-checklist-secret-at-least-32-bytes"

    let directory: String
    let configPath: String
    private(set) var process: RunneldProcess
    let certificates: TestCertificates?

    /// `toml` may name `DIR`, replaced by the daemon's directory; `tls` adds a TLS listener with
    /// a certificate for 127.0.0.1 (`trust` gives the settings that trust it).
    init(toml: String, tls: Bool = false) throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("runnel-swift-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        configPath = directory + "/runneld.toml"
        var text = toml.replacingOccurrences(of: "DIR", with: directory)
        if tls {
            let certificates = try TestCertificates()
            self.certificates = certificates
            text =
                """
                tls_listen = "127.0.0.1:0"
                tls_cert_file = "\(certificates.path("server.pem"))"
                tls_key_file = "\(certificates.path("server.key"))"

                """ + text
        } else {
            certificates = nil
        }
        try ("log_level = \"info\"\n" + text).write(toFile: configPath, atomically: true, encoding: .utf8)
        process = try Self.start(configPath: configPath, port: 0)
    }

    deinit {
        process.kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var url: String { "runnel://127.0.0.1:\(process.port)" }
    var tlsURL: String { "runnels://127.0.0.1:\(process.announcedPort("listening with TLS on") ?? 0)" }

    /// Kills the daemon with SIGKILL (as a crash would).
    func kill() { process.kill() }

    /// Starts it again on the same port, config and data.
    func restart() throws {
        process.kill()
        process = try Self.start(configPath: configPath, port: process.port)
    }

    /// Replaces the config (atomically) and has the daemon read it again.
    func reload(_ toml: String) throws {
        try ("log_level = \"info\"\n" + toml).write(toFile: configPath, atomically: true, encoding: .utf8)
        process.signal(SIGHUP)
    }

    private static func start(configPath: String, port: UInt16) throws -> RunneldProcess {
        try RunneldProcess(
            executable: try RunneldBinary.path(),
            arguments: [
                "--listen", "127.0.0.1:\(port)", "--http-listen", "127.0.0.1:0", "--config", configPath, "--loops",
                RunneldProcess.testLoops,
            ],
            configPath: configPath)
    }
}
