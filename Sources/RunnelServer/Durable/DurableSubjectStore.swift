import Logging
import Runnel
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// The subject store with a disk: every subject lives in memory (a `MemorySubjectStore`), and
/// every change to a durable one is also appended, in order, to the SQLite journal that a
/// `JournalWriter` commits in batches on its own thread.
///
/// With `fsync = always` a durable subject's values reach its subscribers and retention, and
/// its terminal event and deletion reach its subscribers, only once their batch is on disk:
/// the store keeps each such step, in order, until the writer reports the commit, and
/// `whenWritten` holds replies the same way. With `everysec` and `no` everything happens at
/// once and the journal follows. When the writer cannot write (a full disk) it says so;
/// meanwhile `checkDurableWrites` refuses new durable changes with `storage`.
///
/// Thread rules: loop thread only; commit reports come through the loop's scheduler.
/// Lifetime rule: `close()` drains and stops the writer.
package final class DurableSubjectStore: SubjectStore, @unchecked Sendable {
    let fsync: FsyncMode
    package let local: MemorySubjectStore
    private var writer: JournalWriter!
    private var nextID: Int64
    /// Changes appended to the journal, and how many of them the writer has reported.
    private var appended: UInt64 = 0
    private var committed: UInt64 = 0
    /// Steps waiting for the disk, oldest first: each runs once the change numbered `number`
    /// is committed.
    private var waiting: [(number: UInt64, step: (ProtocolError?) -> Void)] = []
    /// Why durable changes are refused now, while the writer retries a failed batch.
    private var failure: ProtocolError?
    private let logger: Logger

    /// Reads the journal in `directory`, then opens it as `init(journal:...)` does.
    convenience init(
        directory: String, fsync: FsyncMode, scheduler: LoopScheduler, logger: Logger,
        retained: RetainedValues = RetainedValues()
    ) throws(JournalError) {
        try self.init(
            journal: try JournalDatabase.read(directory: directory), fsync: fsync, scheduler: scheduler,
            logger: logger, retained: retained)
    }

    /// Opens the journal `journal` was read from for writing, restores every durable subject
    /// it holds (with a new epoch each when the last stop was not clean and `fsync` does not
    /// cover that), and starts the writer; restored subjects count in `retained`, replay ones
    /// bounded by its `maxReplayBytes`. Runs on the loop thread before anyone is served.
    package init(
        journal: StoredJournal, fsync: FsyncMode, scheduler: LoopScheduler, logger: Logger,
        retained: RetainedValues = RetainedValues()
    ) throws(JournalError) {
        self.fsync = fsync
        local = MemorySubjectStore(retained: retained)
        self.logger = logger
        let database = try JournalDatabase.open(journal, fsync: fsync)
        var stored = journal.subjects
        if !journal.wasClean && fsync.losesOnCrash && !stored.isEmpty {
            for index in stored.indices { stored[index].epoch = Epoch.make() }
            do {
                try database.renewEpochs(stored.map { ($0.id, $0.epoch) })
            } catch {
                throw JournalError(path: database.path, problem: "cannot record new epochs: \(error.message)")
            }
            logger.warning(
                "the last stop was not clean: durable subjects take new epochs (fsync = \(fsync.rawValue))",
                metadata: ["subjects": "\(stored.count)"])
        }
        nextID = (stored.map(\.id).max() ?? 0) + 1
        for subject in stored { local.adopt(restore(subject, maxReplayBytes: retained.maxReplayBytes)) }
        // The writer's reports reach the store through `reference`, set once the store is made.
        let reference = LoopBoundReference<DurableSubjectStore>(loop: scheduler)
        let reports = LoopInbox<JournalWriter.CommitReport>(loop: scheduler) { batch in
            for report in batch { reference.object?.didCommit(report) }
        }
        writer = JournalWriter(database: database) { report in reports.post(report) }
        reference.object = self
        // After the writer: a map's keys that expired while stopped are journalled as removed.
        retained.dropExpired()
    }

    private func restore(_ stored: StoredSubject, maxReplayBytes: Int) -> SubjectEntry {
        if stored.kind == .map { return restoreMap(stored) }
        let label = SubjectLabel(stored.name, epoch: stored.epoch)
        let values = stored.values.map {
            Message(label: label, raw: $0.value, members: JSONMemberIndex(), seq: $0.seq, time: $0.time)
        }
        let terminal: Event<Message>? = stored.terminal.map { message in
            message.map { .error(ProtocolError(.subjectError, $0)) } ?? .completed
        }
        let dropped = DroppedValueTimes()
        // Values before the oldest kept (trimmed by the journal) were published no later than it.
        if let oldest = values.first, let seq = oldest.seq, seq > 1 { dropped.noteTime(oldest.time) }
        // Only replay and behavior subjects are durable; a behavior's journal holds its value.
        let subject = SubjectEntry.librarySubject(
            of: stored.kind, label: label, capacity: stored.capacity ?? 1, retaining: values, terminal: terminal,
            maxReplayBytes: maxReplayBytes, dropped: dropped)
        return SubjectEntry(
            label: label, kind: stored.kind, capacity: stored.capacity, retainMilliseconds: stored.retainMilliseconds,
            durableID: stored.id, subject: subject, dropped: dropped, lastSeq: stored.seq)
    }

    // MARK: SubjectStore

    package var count: Int { local.count }
    package subscript(name: String) -> SubjectEntry? { local[name] }
    package func list(prefix: String) -> [SubjectEntry] { local.list(prefix: prefix) }
    package func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        local.patternSignal(pattern, admitting: admitting)
    }
    package let keepsDurableSubjects = true
    package var repliesWaitForDisk: Bool { fsync == .always }
    package var journalStatistics: JournalStatistics? { writer.statisticsNow }
    package var retained: RetainedValues { local.retained }
    package func checkShared() throws(ProtocolError) {}
    package func repliesWait(forChangeOf entry: SubjectEntry) -> Bool { entry.isDurable }
    package func repliesWait(forValueOf entry: SubjectEntry) -> Bool { entry.isDurable }

    package func checkDurableWrites() throws(ProtocolError) {
        if let failure { throw failure }
    }

    package func create(
        _ name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, initial: RawJSON?, durable: Bool
    ) -> SubjectEntry {
        guard durable else {
            return local.create(
                name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
                durable: false)
        }
        return adoptNew { id, created in
            let entry = SubjectEntry(
                name: name, kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, initial: initial,
                created: created, maxReplayBytes: retained.maxReplayBytes, durableID: id)
            let creation = JournalChange.create(
                id: id, name: name, kind: kind, capacity: entry.capacity, retainMilliseconds: entry.retainMilliseconds,
                epoch: entry.epoch, initial: kind == .behavior ? (initial ?? .null).buffer : nil, time: created)
            return (entry, creation)
        }
    }

    /// A new durable subject, whichever its kind: `make` builds its entry and the journal's
    /// record of its creation from the id it gets and the time it is made; the store takes the
    /// entry in and appends the record. A creation the disk refused is undone: its reply says so.
    func adoptNew(_ make: (_ id: Int64, _ created: Int64) -> (SubjectEntry, JournalChange)) -> SubjectEntry {
        let id = nextID
        nextID += 1
        let (entry, creation) = make(id, retained.now)
        local.adopt(entry)
        append(creation)
        whenWritten { [local] error in
            if error != nil && !entry.isDeleted { local.delete(entry) }
        }
        return entry
    }

    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound
    ) {
        guard let id = entry.durableID else {
            local.publish(value, members: members, to: entry, bounding: bound)
            return
        }
        entry.published &+= 1
        let message = Message(
            label: entry.label, raw: value, members: members, seq: entry.nextSeq(), time: retained.now)
        append(.publish(id: id, seq: message.seq!, value: value.buffer, time: message.time))
        whenWritten { error in
            guard error == nil else { return }
            bound.beginPublish()
            entry.deliver(message)
            bound.endPublish()
        }
    }

    package func terminate(_ entry: SubjectEntry, error: ProtocolError?) {
        guard let id = entry.durableID else {
            local.terminate(entry, error: error)
            return
        }
        entry.isEnding = true
        append(.terminate(id: id, errorMessage: error?.message))
        whenWritten { [local] failure in
            if failure == nil { local.terminate(entry, error: error) }
        }
    }

    package func delete(_ entry: SubjectEntry) {
        guard let id = entry.durableID else {
            local.delete(entry)
            return
        }
        local.forget(entry)
        append(.delete(id: id))
        whenWritten { _ in entry.subject.sendCompleted() }
    }

    /// Also how the store's own steps (a value's delivery, a termination) wait for the disk:
    /// called right after an append, it waits for that change under `always`.
    package func whenWritten(_ action: @escaping (ProtocolError?) -> Void) {
        guard fsync == .always, committed < appended else {
            action(nil)
            return
        }
        waiting.append((appended, action))
    }

    package func close() {
        let statistics = writer.statisticsNow
        if statistics.failing {
            logger.error(
                "stopping while the journal cannot be written: durable changes not on disk are lost",
                metadata: ["queued": "\(statistics.queued)"])
        }
        writer.stop()
    }

    // MARK: The journal

    func append(_ change: JournalChange) {
        appended = writer.append(change)
    }

    /// A report from the writer (loop thread): runs the steps it allows, in order.
    private func didCommit(_ report: JournalWriter.CommitReport) {
        let error = report.error.map { error in
            ProtocolError(.storage, "durable subjects cannot be written: \(error.message)")
        }
        if let failed = report.error { logger.error("journal write failed", metadata: ["error": "\(failed)"]) }
        failure = report.isRetrying ? error : nil
        committed = report.through
        // The steps a report allows come first (numbers only grow); a step may add more.
        let done = waiting.prefix { $0.number <= committed }.count
        let steps = waiting[..<done].map(\.step)
        waiting.removeFirst(done)
        for step in steps { step(error) }
    }
}
