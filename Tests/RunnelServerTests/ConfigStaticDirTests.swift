import Foundation
import Testing

@testable import RunnelServer

/// `http_static_dir`: off by default and with `""`, a directory checked when the file is read
/// (so a start, `--check-config` and a reload all refuse a folder that is not there), and live
/// on reload.
///
/// Thread rules: each test on its own values and folder. Lifetime rule: a test's folder is
/// removed after it.
@Suite struct ConfigStaticDirTests {
    static func message(_ toml: String) -> String? {
        do {
            _ = try ServerConfig.parse(toml: toml, origin: "config /etc/runnel/runneld.toml")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func aDirectoryIsServedAndNothingByDefault() throws {
        let folder = FileManager.default.temporaryDirectory.path
        #expect(ServerConfig().httpStaticDir == nil)
        #expect(try ServerConfig.parse(toml: #"http_static_dir = """#).httpStaticDir == nil)
        let config = try ServerConfig.parse(toml: "http_static_dir = \"\(folder)\"")
        #expect(config.httpStaticDir == folder)
        #expect(config.renderedValue(of: .httpStaticDir) == "\"\(folder)\"")
        #expect(ServerConfig().renderedValue(of: .httpStaticDir) == "\"\"")
        #expect(ConfigKey.httpStaticDir.isLive)
        let change = config.changes(from: ServerConfig())
        #expect(change.map(\.key) == ["http_static_dir"] && change.first?.applicability == .live)
    }

    @Test func aFolderThatCannotBeServedIsAnErrorNamingIt() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "runnel-static-\(UInt64.random(in: 0...UInt64.max)).txt")
        try "not a folder".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let prefix = "config /etc/runnel/runneld.toml: key 'http_static_dir': "
        #expect(
            Self.message(#"http_static_dir = "/nonexistent/site""#) == prefix + #""/nonexistent/site": does not exist"#)
        #expect(Self.message("http_static_dir = \"\(file.path)\"") == prefix + "\"\(file.path)\": is not a directory")
        #expect(Self.message("http_static_dir = 5") == prefix + #"must be a directory's path ("" for none), got 5"#)
    }
}
