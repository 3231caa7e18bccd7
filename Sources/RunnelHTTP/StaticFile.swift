import RunnelServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A file of `http_static_dir` a request's path leads to, opened, and how it is found: the path
/// made a relative one that cannot leave the folder (`relativePath(of:)`), then resolved with
/// every symbolic link followed and kept only when it still lies inside the folder
/// (`find(_:in:)`), so neither `..` (plain or percent-encoded) nor a link can reach a file
/// elsewhere. Hidden files (a segment starting with `.`) are never served.
///
/// These are blocking system calls on the loop thread (a few `lstat`s of `realpath`, `open`,
/// `fstat`, and a `read` of at most `StaticFilesRoute.maxFileBytes` when the file changed):
/// bounded, and for the small files a team's pages are, a few microseconds from the page cache.
///
/// Thread rules: loop thread, as its route. Lifetime rule: owns its descriptor, closed when
/// the value goes (`deinit`); noncopyable, so it is closed once.
struct StaticFile: ~Copyable {
    /// Where a path leads.
    enum Found: ~Copyable {
        case file(StaticFile)
        /// A folder, asked for without the `/` that names its `index.html`.
        case folder
        /// Nothing that is served: no such file, one outside the folder, or not a regular file.
        case nothing
    }

    /// The file's real path, every link resolved.
    let path: String
    private let descriptor: Int32
    private let status: stat

    private init(path: String, descriptor: Int32, status: stat) {
        self.path = path
        self.descriptor = descriptor
        self.status = status
    }

    deinit { close(descriptor) }

    var size: Int { Int(status.st_size) }

    /// A weak entity tag (RFC 9110, 8.8.3) that changes when the file does: its inode (a file
    /// replaced by a rename), size and modification time, to the nanosecond. Weak: the same for
    /// the file gzip'd.
    var entityTag: String {
        let modified = status.st_mtim
        return "W/\"\(String(status.st_ino, radix: 16))-\(String(status.st_size, radix: 16))-"
            + "\(String(modified.tv_sec, radix: 16)).\(String(modified.tv_nsec, radix: 16))\""
    }

    /// The file's bytes (its `size` at most, read whole); nil when it cannot be read.
    func contents() -> [UInt8]? {
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            while count < buffer.count {
                let done = read(descriptor, buffer.baseAddress! + count, buffer.count - count)
                if done < 0 && errno == EINTR { continue }
                if done < 0 { failed = true }
                if done <= 0 { break }
                count += done
            }
        }
        return failed ? nil : bytes
    }

    /// The file `path` names inside the folder, relative to it: percent-decoded and split at
    /// `/`, a path ending in `/` naming its folder's `index.html`; nil when it might leave the
    /// folder or name what is not served: a segment that is empty (`//`) or starts with `.`
    /// (`..`, `.`, `.git`), a NUL, or a path that is not valid percent-encoded UTF-8.
    /// Decoding comes first, so `%2e%2e` and `%2f` are refused as `..` and `/` are.
    static func relativePath(of path: Substring) -> String? {
        guard let decoded = PercentDecoding.decode(path, plusIsSpace: false), decoded.hasPrefix("/"),
            !decoded.utf8.contains(0)
        else { return nil }
        var segments = decoded.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        if segments.last?.isEmpty == true { segments[segments.count - 1] = "index.html" }
        guard segments.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") }) else { return nil }
        return segments.joined(separator: "/")
    }

    /// `relative` (from `relativePath(of:)`) in `folder`, opened when it is a regular file that,
    /// every link resolved, lies inside the folder (itself resolved too).
    static func find(_ relative: String, in folder: String) -> Found {
        guard let root = realPath(folder), let path = realPath(root + "/" + relative) else { return .nothing }
        guard path.hasPrefix(root.hasSuffix("/") ? root : root + "/") else { return .nothing }
        // Not blocking on a FIFO; no link, as `realpath` left none (one made since is refused).
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return .nothing }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            close(descriptor)
            return .nothing
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            return .file(StaticFile(path: path, descriptor: descriptor, status: status))
        case S_IFDIR:
            close(descriptor)
            return .folder
        default:
            close(descriptor)
            return .nothing
        }
    }

    /// `path` made absolute with every link resolved; nil when it does not exist.
    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The `Content-Type` of a file named `name`, from its extension (in any case), and whether
    /// gzip shrinks it (not a PNG or JPEG); `application/octet-stream` for any other.
    static func mediaType(of name: String) -> (type: StaticString, isCompressible: Bool) {
        let dot = name.lastIndex(of: ".")
        switch dot.map({ name[name.index(after: $0)...].lowercased() }) {
        case "html", "htm": return ("text/html; charset=utf-8", true)
        case "js", "mjs": return ("text/javascript; charset=utf-8", true)
        case "css": return ("text/css; charset=utf-8", true)
        case "json", "map": return ("application/json", true)
        case "svg": return ("image/svg+xml", true)
        case "png": return ("image/png", false)
        case "jpg", "jpeg": return ("image/jpeg", false)
        case "ico": return ("image/x-icon", true)
        case "txt": return ("text/plain; charset=utf-8", true)
        case "wasm": return ("application/wasm", true)
        default: return ("application/octet-stream", true)
        }
    }
}
