import Foundation
import Testing

@testable import RunnelHTTP
@testable import RunnelServer

/// The files of `http_static_dir`: which paths name a file inside the folder, what a path
/// finds there (never a file outside it, whatever links lead there), and each file's
/// `Content-Type`. `Tests/blackbox/test_http.py`'s `TestStatic` checks the same over HTTP.
///
/// Thread rules: each test on its own values and folder. Lifetime rule: a test's folder is
/// removed after it.
@Suite struct StaticFileTests {
    /// A folder of its own holding `site/` (`index.html`, `app.js`, `ops/index.html`, a link
    /// to `app.js`, a link out of `site/`, a FIFO) and `secret.txt` beside `site/`, removed
    /// after `body`, which is given `site/`'s path.
    static func withSite(_ body: (String) throws -> Void) throws {
        let files = FileManager.default
        let directory = files.temporaryDirectory.appendingPathComponent(
            "runnel-static-\(UInt64.random(in: 0...UInt64.max))")
        let site = directory.appendingPathComponent("site")
        try files.createDirectory(at: site.appendingPathComponent("ops"), withIntermediateDirectories: true)
        defer { try? files.removeItem(at: directory) }
        try "<p>team</p>".write(to: site.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try "export {}".write(to: site.appendingPathComponent("app.js"), atomically: true, encoding: .utf8)
        try "<p>ops</p>".write(to: site.appendingPathComponent("ops/index.html"), atomically: true, encoding: .utf8)
        try "secret".write(to: directory.appendingPathComponent("secret.txt"), atomically: true, encoding: .utf8)
        try files.createSymbolicLink(atPath: site.path + "/alias.js", withDestinationPath: "app.js")
        try files.createSymbolicLink(atPath: site.path + "/out.txt", withDestinationPath: "../secret.txt")
        try files.createSymbolicLink(atPath: site.path + "/up", withDestinationPath: "..")
        #expect(mkfifo(site.path + "/pipe.js", 0o600) == 0)
        try body(site.path)
    }

    /// What `path` finds in `folder`: the file's bytes as text, `folder`, or `nothing`.
    static func found(_ path: String, in folder: String) -> String {
        guard let name = StaticFile.relativePath(of: path[...]) else { return "refused" }
        switch StaticFile.find(name, in: folder) {
        case .file(let file): return String(decoding: file.contents() ?? [], as: UTF8.self)
        case .folder: return "folder"
        case .nothing: return "nothing"
        }
    }

    @Test func aPathThatMightLeaveTheFolderOrNameAHiddenFileIsRefused() {
        for path in [
            "/../secret.txt", "/a/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2e%2fsecret.txt", "/.git/config",
            "/./app.js", "/a//b", "/app.js%00.png", "/%ff", "/%zz", "app.js", "/..",
        ] {
            #expect(StaticFile.relativePath(of: path[...]) == nil, "\(path)")
        }
        #expect(StaticFile.relativePath(of: "/app.js") == "app.js")
        #expect(StaticFile.relativePath(of: "/ops/") == "ops/index.html")
        #expect(StaticFile.relativePath(of: "/caf%C3%A9/a%20b.js") == "café/a b.js")
        #expect(StaticFile.relativePath(of: "/a..b/c.") == "a..b/c.")
    }

    @Test func aPathFindsOnlyRegularFilesInsideTheFolder() throws {
        try Self.withSite { site in
            #expect(Self.found("/app.js", in: site) == "export {}")
            #expect(Self.found("/ops/", in: site) == "<p>ops</p>")
            #expect(Self.found("/ops", in: site) == "folder")
            #expect(Self.found("/alias.js", in: site) == "export {}")
            #expect(Self.found("/missing.js", in: site) == "nothing")
            #expect(Self.found("/app.js/", in: site) == "nothing")
            // Links that lead out of the folder, to a file or to its parent.
            #expect(Self.found("/out.txt", in: site) == "nothing")
            #expect(Self.found("/up/secret.txt", in: site) == "nothing")
            // A FIFO is not served (nor waited on: opening it does not block).
            #expect(Self.found("/pipe.js", in: site) == "nothing")
            // The folder named through a link (or with a trailing slash) is the same folder.
            #expect(Self.found("/app.js", in: site + "/") == "export {}")
            #expect(Self.found("/app.js", in: site + "/ops/..") == "export {}")
            #expect(Self.found("/app.js", in: site + "/missing") == "nothing")
        }
    }

    @Test func theEntityTagChangesWithTheFile() throws {
        try Self.withSite { site in
            func tag() -> String? {
                switch StaticFile.find("app.js", in: site) {
                case .file(let file): return file.entityTag
                case .folder: return nil
                case .nothing: return nil
                }
            }
            let before = try #require(tag())
            #expect(before.hasPrefix("W/\"") && before.hasSuffix("\""))
            #expect(tag() == before)
            try "export { a }".write(toFile: site + "/app.js", atomically: true, encoding: .utf8)
            #expect(tag() != before)
        }
    }

    @Test func theContentTypeComesFromTheExtension() {
        let cases: [(String, String, Bool)] = [
            ("index.html", "text/html; charset=utf-8", true), ("a/b.HTM", "text/html; charset=utf-8", true),
            ("app.js", "text/javascript; charset=utf-8", true), ("app.mjs", "text/javascript; charset=utf-8", true),
            ("site.css", "text/css; charset=utf-8", true), ("data.json", "application/json", true),
            ("app.js.map", "application/json", true), ("logo.svg", "image/svg+xml", true),
            ("logo.png", "image/png", false), ("photo.JPG", "image/jpeg", false), ("photo.jpeg", "image/jpeg", false),
            ("favicon.ico", "image/x-icon", true), ("notes.txt", "text/plain; charset=utf-8", true),
            ("module.wasm", "application/wasm", true), ("archive.tar", "application/octet-stream", true),
            ("README", "application/octet-stream", true),
        ]
        for (name, type, compressible) in cases {
            let found = StaticFile.mediaType(of: name)
            #expect(found.type.description == type && found.isCompressible == compressible, "\(name)")
        }
    }
}
