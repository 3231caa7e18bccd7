import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The SQLite file that keeps durable subjects: its schema, reading it back at start, and
/// applying batches of changes, one transaction each.
///
/// Tables: `subjects` (one row per durable subject: kind, capacity, epoch, seq counter,
/// terminal event), `vals` (the retained values, by subject and seq: nothing else is kept,
/// trimming is part of each batch), `keyvals` (a map's live keys, each with its latest write)
/// and `meta` (the schema version, and `open`, 1 while a
/// runneld has the file open: found at start, it means the last stop was not clean).
///
/// Thread rules: one thread at a time; at start the loop thread before anyone is served,
/// then the journal's writer thread only.
package final class JournalDatabase {
    static let fileName = "runnel.db"
    /// Version 2 added the values' publish times (`vals.ts`) and `retain_s` (`subjects.retain_ms`),
    /// version 3 maps (`keyvals`; a map's `max_keys` in `capacity`, its `ttl_s` in `retain_ms`);
    /// an older file is read as it is and upgraded when opened for writing.
    static let schemaVersion = "3"
    private static let readableVersions: Set<String> = ["1", "2", schemaVersion]

    let path: String
    let fsync: FsyncMode
    private let database: SQLiteDatabase
    /// How many values each subject keeps: a replay's capacity, a behavior's 1; a map keeps
    /// none in `vals` (`Int.max`: nothing to trim there), its keys in `keyvals`.
    private var retention: [Int64: Int] = [:]

    /// Reads what `directory` holds without writing anything there (no file made, changed or
    /// removed): checks the database whole and reads back every stored subject, so that a
    /// start refused for what is stored leaves the directory as it found it. A missing
    /// directory or database holds nothing.
    package static func read(directory: String) throws(JournalError) -> StoredJournal {
        let path = databasePath(in: directory)
        guard try checkDirectory(directory), access(path, F_OK) == 0 else {
            return StoredJournal(
                directory: directory, exists: false, schema: schemaVersion, subjects: [], wasClean: true)
        }
        do {
            // A write-ahead log without its index cannot be read without rebuilding the index:
            // then (only after a hand-made change to the directory) it is read as a writer would.
            let database =
                try SQLiteDatabase(readingWithoutWriting: path) ?? SQLiteDatabase(path: path, create: false)
            let check = try database.text("PRAGMA quick_check")
            guard check == "ok" else { throw JournalError(path: path, problem: "corrupt: \(check ?? "no answer")") }
            let version = try database.text("SELECT value FROM meta WHERE key = 'schema'")
            guard let version, readableVersions.contains(version) else {
                throw JournalError(path: path, problem: "unknown schema version \(version ?? "none")")
            }
            let wasClean = try database.text("SELECT value FROM meta WHERE key = 'open'") == "0"
            let subjects = try load(from: database, path: path, timed: version != "1", keyed: version == schemaVersion)
            return StoredJournal(
                directory: directory, exists: true, schema: version, subjects: subjects, wasClean: wasClean)
        } catch let error as JournalError {
            throw error
        } catch let error as SQLiteError {
            throw JournalError(path: path, problem: error.isCorrupt ? "corrupt: \(error.message)" : error.message)
        } catch {
            throw JournalError(path: path, problem: "\(error)")
        }
    }

    /// Opens for writing the database `stored` was read from (creating the directory and the
    /// database when they are missing) and marks it open.
    static func open(_ stored: StoredJournal, fsync: FsyncMode) throws(JournalError) -> JournalDatabase {
        try ensureDirectory(stored.directory)
        let path = databasePath(in: stored.directory)
        let journal: JournalDatabase
        do {
            journal = JournalDatabase(
                path: path, fsync: fsync, database: try SQLiteDatabase(path: path, create: !stored.exists))
        } catch {
            throw JournalError(path: path, problem: "cannot open: \(error.message)")
        }
        do {
            try journal.database.execute("PRAGMA journal_mode = WAL")
            try journal.database.execute(fsync.pragma)
            if !stored.exists { try journal.createSchema() }
            if stored.exists && stored.schema == "1" { try journal.upgradeFromVersion1() }
            if stored.exists && stored.schema != schemaVersion { try journal.upgradeToVersion3() }
            try journal.setOpen(true)
        } catch {
            throw JournalError(path: path, problem: error.isCorrupt ? "corrupt: \(error.message)" : error.message)
        }
        for subject in stored.subjects {
            journal.retention[subject.id] = retention(of: subject.kind, capacity: subject.capacity)
        }
        return journal
    }

    /// What `retention` keeps of a subject of `kind`.
    private static func retention(of kind: SubjectKind, capacity: Int?) -> Int {
        switch kind {
        case .replay: capacity ?? 0
        case .map: .max
        case .subject, .behavior: 1
        }
    }

    private static func databasePath(in directory: String) -> String {
        directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName
    }

    private init(path: String, fsync: FsyncMode, database: SQLiteDatabase) {
        self.path = path
        self.fsync = fsync
        self.database = database
    }

    /// Whether `directory` exists; fails when it is not a directory or cannot be written.
    private static func checkDirectory(_ directory: String) throws(JournalError) -> Bool {
        var status = stat()
        if stat(directory, &status) != 0 {
            guard errno == ENOENT else {
                throw JournalError(path: directory, problem: String(cString: strerror(errno)))
            }
            return false
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw JournalError(path: directory, problem: "not a directory")
        }
        guard access(directory, R_OK | W_OK | X_OK) == 0 else {
            throw JournalError(path: directory, problem: "cannot read and write: \(String(cString: strerror(errno)))")
        }
        return true
    }

    /// Creates `directory` when it is missing and its parent exists (`checkDirectory`'s checks
    /// otherwise).
    private static func ensureDirectory(_ directory: String) throws(JournalError) {
        guard try !checkDirectory(directory) else { return }
        guard mkdir(directory, 0o750) == 0 else {
            throw JournalError(path: directory, problem: "cannot create: \(String(cString: strerror(errno)))")
        }
    }

    private func createSchema() throws(SQLiteError) {
        try database.execute(
            """
            BEGIN;
            CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE subjects(
                id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, capacity INTEGER,
                epoch TEXT NOT NULL, seq INTEGER NOT NULL, terminal TEXT, message TEXT, retain_ms INTEGER);
            CREATE TABLE vals(
                subject INTEGER NOT NULL, seq INTEGER NOT NULL, value BLOB NOT NULL, ts INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (subject, seq)) WITHOUT ROWID;
            \(Self.keyValuesTable);
            INSERT INTO meta VALUES ('schema', '\(Self.schemaVersion)'), ('open', '0');
            COMMIT;
            """)
    }

    /// Adds version 2's columns to a version 1 file: its values keep time 0 (unknown).
    private func upgradeFromVersion1() throws(SQLiteError) {
        try durably { () throws(SQLiteError) in
            try database.execute(
                """
                ALTER TABLE subjects ADD COLUMN retain_ms INTEGER;
                ALTER TABLE vals ADD COLUMN ts INTEGER NOT NULL DEFAULT 0;
                UPDATE meta SET value = '2' WHERE key = 'schema';
                """)
        }
    }

    /// Version 3's table of maps' keys.
    private static let keyValuesTable = """
        CREATE TABLE keyvals(
            subject INTEGER NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, value BLOB NOT NULL, ts INTEGER NOT NULL,
            PRIMARY KEY (subject, key)) WITHOUT ROWID
        """

    /// Adds version 3's table to a version 2 file (which holds no map).
    private func upgradeToVersion3() throws(SQLiteError) {
        try durably { () throws(SQLiteError) in
            try database.execute(
                "\(Self.keyValuesTable); UPDATE meta SET value = '\(Self.schemaVersion)' WHERE key = 'schema';")
        }
    }

    /// Marks the file cleanly closed, the last thing a clean stop does: first moves the
    /// write-ahead log into the database file, so that the file alone holds everything.
    func closeCleanly() throws(SQLiteError) {
        try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try setOpen(false)
    }

    /// Marks the file open (at start) or cleanly closed, on disk before it returns.
    func setOpen(_ open: Bool) throws(SQLiteError) {
        try durably { () throws(SQLiteError) in
            let statement = try database.statement("UPDATE meta SET value = ? WHERE key = 'open'")
            statement.bind(1, open ? "1" : "0")
            try statement.run()
        }
    }

    /// Runs `body` in a transaction committed with a full sync, whatever the `fsync` mode:
    /// every earlier commit is on disk afterwards too (one sync of the write-ahead log).
    func durably(_ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try database.execute("PRAGMA synchronous = FULL; BEGIN IMMEDIATE")
        defer { try? database.execute(fsync.pragma) }
        do {
            try body()
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// Gives every subject a new epoch (after a stop its `fsync` mode does not cover).
    func renewEpochs(_ epochs: [(id: Int64, epoch: String)]) throws(SQLiteError) {
        try durably { () throws(SQLiteError) in
            let statement = try database.statement("UPDATE subjects SET epoch = ? WHERE id = ?")
            for (id, epoch) in epochs {
                statement.bind(1, epoch)
                statement.bind(2, id)
                try statement.run()
            }
        }
    }

    /// Every stored subject, checked: a row that breaks the schema's rules is corruption.
    /// `timed`: the file has version 2's columns (else values have time 0 and no `retain_s`);
    /// `keyed`: version 3's table of maps' keys (else it holds no map).
    private static func load(from database: SQLiteDatabase, path: String, timed: Bool, keyed: Bool) throws
        -> [StoredSubject]
    {
        var subjects: [StoredSubject] = []
        let retainColumn = timed ? "retain_ms" : "NULL"
        let rows = try database.statement(
            "SELECT id, name, kind, capacity, epoch, seq, terminal, message, \(retainColumn) FROM subjects ORDER BY id")
        defer { rows.reset() }
        let values = try database.statement(
            "SELECT seq, value, \(timed ? "ts" : "0") FROM vals WHERE subject = ? ORDER BY seq")
        while try rows.step() {
            let id = rows.int64(0)
            let name = rows.text(1) ?? ""
            func corrupt(_ problem: String) -> JournalError {
                JournalError(path: path, problem: "corrupt: subject '\(name)' (id \(id)): \(problem)")
            }
            guard SubjectName.isValidName(name) else { throw corrupt("bad name") }
            guard let kind = rows.text(2).flatMap(SubjectKind.init(rawValue:)), kind != .subject,
                kind != .map || keyed
            else {
                throw corrupt("bad kind \(rows.text(2) ?? "NULL")")
            }
            let capacity: Int? = rows.isNull(3) ? nil : Int(rows.int64(3))
            if kind == .replay || kind == .map {
                guard let capacity, capacity >= 1 else {
                    throw corrupt("a \(kind.rawValue) subject without a capacity")
                }
            }
            guard let epoch = rows.text(4), Epoch.isValid(epoch.utf8) else { throw corrupt("bad epoch") }
            guard rows.int64(5) >= 0 else { throw corrupt("negative seq") }
            let seq = UInt64(rows.int64(5))
            let terminal: String??
            switch rows.text(6) {
            case nil: terminal = nil
            case "completed": terminal = .some(nil)
            case "error": terminal = .some(rows.text(7) ?? "")
            case let other?: throw corrupt("bad terminal event \(other)")
            }
            let retainMilliseconds: Int64? = rows.isNull(8) ? nil : rows.int64(8)
            if let retainMilliseconds, kind == .behavior || retainMilliseconds <= 0 {
                throw corrupt("retain_ms \(retainMilliseconds) on a \(kind.rawValue) subject")
            }
            var kept: [(seq: UInt64, value: RawJSON, time: Int64)] = []
            values.bind(1, id)
            defer { values.reset() }
            while try values.step() {
                let valueSeq = values.int64(0)
                guard valueSeq >= 0, UInt64(valueSeq) <= seq else { throw corrupt("a value with seq \(valueSeq)") }
                let bytes = values.bytes(1)
                guard let value = bytes.withUnsafeBytes({ try? RawJSON(validating: $0, maxDepth: .max) }) else {
                    throw corrupt("value \(valueSeq) is not JSON")
                }
                kept.append((UInt64(valueSeq), value, values.int64(2)))
            }
            let limit = kind == .replay ? capacity! : kind == .map ? 0 : 1
            guard kept.count <= limit else { throw corrupt("\(kept.count) values kept, more than \(limit)") }
            if kind == .behavior && kept.isEmpty { throw corrupt("a behavior subject without a value") }
            var subject = StoredSubject(
                id: id, name: name, kind: kind, capacity: kind == .behavior ? nil : capacity,
                retainMilliseconds: retainMilliseconds, epoch: epoch, seq: seq, values: kept, terminal: terminal)
            if kind == .map { subject.keys = try loadKeys(of: subject, from: database, corrupt: corrupt) }
            subjects.append(subject)
        }
        return subjects
    }

    // MARK: Batches

    /// Applies `changes` in one transaction (synced as the `fsync` mode says).
    func apply(_ changes: ArraySlice<JournalChange>) throws(SQLiteError) {
        // The latest seq each subject reaches in this batch: values that the same batch trims
        // are never written.
        var latest: [Int64: UInt64] = [:]
        for change in changes {
            switch change {
            case .publish(let id, let seq, _, _), .write(let id, _, let seq, _, _), .remove(let id, _, let seq):
                latest[id] = seq
            case .create, .terminate, .delete: break
            }
        }
        try database.execute("BEGIN IMMEDIATE")
        do {
            for change in changes { try apply(change, latest: latest) }
            let setSeq = try database.statement("UPDATE subjects SET seq = ? WHERE id = ?")
            let trim = try database.statement("DELETE FROM vals WHERE subject = ? AND seq <= ?")
            for (id, seq) in latest {
                guard let keep = retention[id] else { continue }
                setSeq.bind(1, Int64(seq))
                setSeq.bind(2, id)
                try setSeq.run()
                if seq >= UInt64(keep) {
                    trim.bind(1, id)
                    trim.bind(2, Int64(seq - UInt64(keep)))
                    try trim.run()
                }
            }
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    private func apply(_ change: JournalChange, latest: [Int64: UInt64]) throws(SQLiteError) {
        switch change {
        case .create(let id, let name, let kind, let capacity, let retainMilliseconds, let epoch, let initial, let time):
            retention[id] = Self.retention(of: kind, capacity: capacity)
            let insert = try database.statement(
                "INSERT INTO subjects (id, name, kind, capacity, epoch, seq, retain_ms) VALUES (?, ?, ?, ?, ?, 0, ?)")
            insert.bind(1, id)
            insert.bind(2, name)
            insert.bind(3, kind.rawValue)
            if let capacity { insert.bind(4, Int64(capacity)) } else { insert.bind(4, nil as String?) }
            insert.bind(5, epoch)
            if let retainMilliseconds { insert.bind(6, retainMilliseconds) } else { insert.bind(6, nil as String?) }
            try insert.run()
            if let initial { try insertValue(id: id, seq: 0, initial, time: time) }
        case .publish(let id, let seq, let value, let time):
            guard let keep = retention[id], let newest = latest[id], seq + UInt64(keep) > newest else { return }
            try insertValue(id: id, seq: seq, value, time: time)
        case .write, .remove:
            try applyKeyed(change, in: database)
        case .terminate(let id, let errorMessage):
            let update = try database.statement("UPDATE subjects SET terminal = ?, message = ? WHERE id = ?")
            update.bind(1, errorMessage == nil ? "completed" : "error")
            update.bind(2, errorMessage)
            update.bind(3, id)
            try update.run()
        case .delete(let id):
            retention[id] = nil
            for table in ["vals", "keyvals"] {
                let values = try database.statement("DELETE FROM \(table) WHERE subject = ?")
                values.bind(1, id)
                try values.run()
            }
            let subject = try database.statement("DELETE FROM subjects WHERE id = ?")
            subject.bind(1, id)
            try subject.run()
        }
    }

    private func insertValue(id: Int64, seq: UInt64, _ value: ByteBuffer, time: Int64) throws(SQLiteError) {
        let insert = try database.statement(
            "INSERT OR REPLACE INTO vals (subject, seq, value, ts) VALUES (?, ?, ?, ?)")
        insert.bind(1, id)
        insert.bind(2, Int64(seq))
        insert.bind(3, bytes: value.bytes)
        insert.bind(4, time)
        try insert.run()
    }

    /// A commit with a full sync: everything committed before it is on disk (`everysec`).
    func sync() throws(SQLiteError) {
        try durably { () throws(SQLiteError) in
            try database.execute("UPDATE meta SET value = value WHERE key = 'open'")
        }
    }

    /// The bytes the database and its write-ahead log take on disk.
    var bytesOnDisk: Int {
        var total = 0
        for suffix in ["", "-wal", "-shm"] {
            var status = stat()
            if stat(path + suffix, &status) == 0 { total += Int(status.st_size) }
        }
        return total
    }
}

/// Why the durable state cannot be used: the file (or directory) and the problem.
package struct JournalError: Error, Sendable, CustomStringConvertible {
    let path: String
    let problem: String
    package var description: String { "\(path): \(problem)" }
}
