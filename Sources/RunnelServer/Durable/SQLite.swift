import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A failure of SQLite, with the file it was about and SQLite's own words.
struct SQLiteError: Error, Sendable, CustomStringConvertible {
    let path: String
    let code: Int32
    let message: String

    /// The file is not a database, or a damaged one.
    var isCorrupt: Bool { code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB }

    var description: String { "\(path): \(message) (SQLite error \(code))" }
}

/// One connection to an SQLite database file, used by one thread at a time (the journal's
/// writer, or the start-up before the loop serves anyone). Opened in `init` for writing, or to
/// read without writing (`init(readingWithoutWriting:)`); closed in `deinit` without the
/// checkpoint SQLite would otherwise run on close.
final class SQLiteDatabase {
    let path: String
    private let handle: OpaquePointer
    private var cached: [String: SQLiteStatement] = [:]

    /// Opens `path`, creating it when `create` is set.
    convenience init(path: String, create: Bool) throws(SQLiteError) {
        try self.init(path: path, uri: path, flags: SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
    }

    private init(path: String, uri: String, flags: Int32) throws(SQLiteError) {
        self.path = path
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(uri, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(path: path, code: status, message: message)
        }
        self.handle = handle
        _ = runnel_sqlite_no_checkpoint_on_close(handle)
        sqlite3_extended_result_codes(handle, 1)
    }

    /// Opens `path` to read it without writing anything beside it: no lock or log file made,
    /// none replayed, changed or removed. A write-ahead log with content is read through its
    /// existing index, which SQLite then keeps in the process's memory (`readonly_shm`); nil
    /// when there is such a log but no index, which cannot be read without making one.
    convenience init?(readingWithoutWriting path: String) throws(SQLiteError) {
        let log = path + "-wal"
        var status = stat()
        let logHasContent = stat(log, &status) == 0 && status.st_size > 0
        if logHasContent && access(path + "-shm", F_OK) != 0 { return nil }
        // Without a log's content the file is the whole database: `immutable` reads it as is.
        let parameters = logHasContent ? "mode=ro&readonly_shm=1" : "immutable=1"
        try self.init(
            path: path, uri: "file:\(Self.uriPath(path))?\(parameters)", flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
    }

    /// `path` as the path of a `file:` URI: the bytes a URI gives a meaning to, escaped.
    private static func uriPath(_ path: String) -> String {
        var escaped = ""
        for character in path.unicodeScalars {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3F"
            case "#": escaped += "%23"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    deinit {
        cached.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs `sql`, one or more statements without parameters.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        guard status == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(path: path, code: status, message: text)
        }
    }

    /// The prepared statement for `sql`, made once and reused.
    func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let statement = cached[sql] { return statement }
        var prepared: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard status == SQLITE_OK, let prepared else { throw error(status) }
        let statement = SQLiteStatement(database: self, handle: prepared)
        cached[sql] = statement
        return statement
    }

    /// The first column of the first row of `sql`, as text (nil when no row or NULL).
    func text(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try statement(sql)
        defer { statement.reset() }
        return try statement.step() ? statement.text(0) : nil
    }

    func error(_ status: Int32) -> SQLiteError {
        SQLiteError(path: path, code: status, message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// A prepared statement of an `SQLiteDatabase`, on that database's thread. Parameters and
/// columns are numbered as in SQL: parameters from 1, columns from 0.
final class SQLiteStatement {
    private unowned let database: SQLiteDatabase
    private let handle: OpaquePointer

    fileprivate init(database: SQLiteDatabase, handle: OpaquePointer) {
        self.database = database
        self.handle = handle
    }

    deinit { sqlite3_finalize(handle) }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: String?) {
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        sqlite3_bind_text(handle, index, value, -1, runnel_sqlite_transient())
    }
    func bind(_ index: Int32, bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_blob(
            handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count),
            runnel_sqlite_transient())
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(handle)
        if status == SQLITE_ROW { return true }
        if status == SQLITE_DONE { return false }
        let failure = database.error(status)
        sqlite3_reset(handle)
        throw failure
    }

    /// Runs a statement that returns no rows, then makes it ready again.
    func run() throws(SQLiteError) {
        defer { reset() }
        _ = try step()
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func text(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: text)
    }
    /// The column's bytes, copied.
    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let base = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }
}
