import Runnel
import RunnelBytes

/// A connection whose socket another loop serves: a `ByteStream` on the group's first loop,
/// where its protocol runs, while the reads and writes of its socket (and its TLS, if any)
/// happen on the loop a `LoopGroup` placed it on, through a `StreamRelay` there.
///
/// Output is copied into one buffer of the stream's (`write(_: ByteBuffer)` past
/// `ByteBuffer.copyThreshold` goes by reference) and handed to the relay once a turn, with
/// every other stream's for that loop, in one `CrossLoopMailbox` batch; the relay writes it
/// as any connection writes. Its unsent bytes are what it accepted and the relay has not taken
/// yet (on its way, `StreamRelay.taken`) plus what the relay's connection has not handed to the
/// kernel (`StreamRelay.backlog`, its `unsentBytes` as the relay last saw them, after each write
/// and each completed one): two atomics a delivery's slow-consumer check reads, no message per
/// write, and no figure that drifts (a TLS connection's ciphertext, counted cumulatively
/// against the plaintext accepted, would have).
///
/// Input arrives in the batches of the relay's loop; while the stream is not reading it is
/// held here (at most `StreamRelay.inputCredit` and one read, past which the relay stops
/// reading the socket), and the peer's end of input waits behind it, as a socket's would.
///
/// Thread rules: as `ByteStream`: `close()`, `closeAfterFlush(timeout:)` and `onClose(_:)`
/// from any thread, everything else on the first loop's thread. Lifetime rule: its relay holds
/// it until the socket has closed (`RelayEvent.closed`), then `connectionDidClose` reaches the
/// delegate, which it lets go.
public final class RelayedStream: ByteStream, LineConnection, TurnEndWork, @unchecked Sendable {
    let loop: LoopScheduler
    let relay: StreamRelay
    private let commands: CrossLoopMailbox<RelayCommand>
    public let configuration: TCPConnection.Configuration
    public let remoteAddress: String
    public var delegate: (any ByteStreamDelegate)?

    @exclusivity(unchecked) private var state = TCPConnection.State.open
    /// Bytes accepted by writes since the stream opened.
    @exclusivity(unchecked) private var accepted: UInt64 = 0
    /// The buffer this turn's output is copied into, where its bytes start, how many it holds and
    /// how much of it is used. A write touches only the last three, so a delivery neither retains
    /// the object nor asks it its capacity (`malloc_usable_size`).
    @exclusivity(unchecked) private var output: ByteBuffer.Storage?
    @exclusivity(unchecked) private var outputBase: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var outputCapacity = 0
    @exclusivity(unchecked) private var outputUsed = 0
    /// The size of the last buffer handed over, for the next one's capacity.
    private var lastOutputSize = 0
    private var isAskedForTurnEnd = false

    private var isReading = false
    /// Input that arrived while the stream was not reading, oldest first, each holding only its
    /// own bytes (a read claimed in place would hold its arena's whole block while it waits).
    private var heldInput: [InputSlice] = []
    /// The peer's end of input arrived behind `heldInput`, or while not reading.
    private var endOfInputHeld = false
    /// Set by `postponeCloseAtEndOfInput`.
    private var closePostponed = false

    private var unsentWaiter: (threshold: Int, action: () -> Void)?
    /// What waits for the relay's answer to `.measure`.
    private var measureWaiters: [(UInt64) -> Void] = []
    private let hooks = CloseHooks()

    init(
        loop: LoopScheduler, relay: StreamRelay, commands: CrossLoopMailbox<RelayCommand>,
        configuration: TCPConnection.Configuration, remoteAddress: String
    ) {
        self.loop = loop
        self.relay = relay
        self.commands = commands
        self.configuration = configuration
        self.remoteAddress = remoteAddress
    }

    public var isOpen: Bool { state == .open }

    // MARK: Unsent output

    /// Read in this order, against the relay's (backlog, then taken): a write the relay takes
    /// meanwhile is counted twice, never missed.
    @inline(__always)
    public var pendingBytes: Int {
        let taken = relay.taken.load(ordering: .sequentiallyConsistent)
        return Int(truncatingIfNeeded: accepted &- taken) + relay.backlog.load(ordering: .sequentiallyConsistent)
    }
    public var unsentBytes: Int { pendingBytes }
    public var sentBytes: UInt64 { relay.sent.load(ordering: .sequentiallyConsistent) }
    /// Asks the relay's loop, whose socket it is, what the peer has acknowledged: `report`
    /// runs with it when the answer is back (never once the stream has closed).
    public func measureAcknowledged(_ report: @escaping (UInt64) -> Void) {
        loop.assertOnLoopThread()
        guard state == .open || state == .draining else { return }
        measureWaiters.append(report)
        if measureWaiters.count == 1 { commands.post(.measure(relay)) }
    }
    @inline(__always)
    public func hasUnsentBytes(over limit: Int) -> Bool { pendingBytes > limit }

    public func whenUnsentBytes(fallTo threshold: Int, _ action: @escaping () -> Void) {
        loop.assertOnLoopThread()
        guard state == .open || state == .draining else { return }
        unsentWaiter = (threshold, action)
        checkUnsentWaiter()
    }

    /// Runs the waiter if its threshold is met; else asks the relay for the next progress
    /// (and looks again, in case the relay's last confirmation came just before it asked).
    private func checkUnsentWaiter() {
        guard let waiter = unsentWaiter else { return }
        if hasUnsentBytes(over: waiter.threshold) {
            relay.wantsProgress.store(true, ordering: .sequentiallyConsistent)
            if hasUnsentBytes(over: waiter.threshold) { return }
        }
        unsentWaiter = nil
        waiter.action()
    }

    // MARK: Writing

    @discardableResult
    public func write(copying bytes: UnsafeRawBufferPointer) -> Bool {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        return append(bytes, none, none, none, lineEnd: false)
    }

    @discardableResult
    public func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer
    ) -> Bool {
        append(first, second, third, fourth, lineEnd: false)
    }

    @inline(__always)
    public func write(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, unlessUnsentOver limit: Int
    ) -> Bool {
        guard !hasUnsentBytes(over: limit) else { return false }
        _ = append(first, second, third, fourth, lineEnd: false)
        return true
    }

    @discardableResult
    public func writeLine(copying bytes: UnsafeRawBufferPointer) -> Bool {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        return append(bytes, none, none, none, lineEnd: true)
    }

    @discardableResult
    @inline(__always)
    public func writeLine(
        copying first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer
    ) -> Bool {
        append(first, second, third, UnsafeRawBufferPointer(start: nil, count: 0), lineEnd: true)
    }

    @discardableResult
    public func write(_ buffer: ByteBuffer) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        guard buffer.count > ByteBuffer.copyThreshold else {
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            return append(buffer.bytes, none, none, none, lineEnd: false)
        }
        handOffOutput()
        accepted &+= UInt64(buffer.count)
        commands.post(.write(relay, buffer))
        return true
    }

    /// Copies the pieces (and a `\n`) into the output buffer.
    @inline(__always)
    private func append(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, lineEnd: Bool
    ) -> Bool {
        loop.assertOnLoopThread()
        guard state == .open else { return false }
        let total = first.count + second.count + third.count + fourth.count + (lineEnd ? 1 : 0)
        var target = reserve(total)
        @inline(__always) func copy(_ piece: UnsafeRawBufferPointer) {
            guard let base = piece.baseAddress, piece.count > 0 else { return }
            target.copyMemory(from: base, byteCount: piece.count)
            target += piece.count
        }
        copy(first)
        copy(second)
        copy(third)
        copy(fourth)
        if lineEnd { target.storeBytes(of: 10, as: UInt8.self) }
        outputUsed += total
        accepted &+= UInt64(total)
        if outputUsed >= TCPConnection.eagerFlushBytes {
            handOffOutput()
        } else if !isAskedForTurnEnd {
            isAskedForTurnEnd = true
            loop.io.atTurnEnd(self)
        }
        return true
    }

    /// Where `count` more bytes of output go: the open buffer if they fit, else a new one (the
    /// open one handed over first).
    @inline(__always)
    private func reserve(_ count: Int) -> UnsafeMutableRawPointer {
        if outputCapacity - outputUsed >= count, let outputBase { return outputBase + outputUsed }
        return reserveNewBuffer(count)
    }

    /// `reserve` when the open buffer has no room: it is handed over and a new one made, sized by
    /// the last one handed over.
    @inline(never)
    private func reserveNewBuffer(_ count: Int) -> UnsafeMutableRawPointer {
        handOffOutput()
        let capacity = max(count, min(TCPConnection.eagerFlushBytes, max(512, lastOutputSize * 2)))
        let made = unsafeDowncast(
            ByteBuffer.Storage.create(minimumCapacity: capacity) { _ in 0 }, to: ByteBuffer.Storage.self)
        let base = made.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
        output = made
        outputBase = base
        outputCapacity = capacity
        outputUsed = 0
        return base
    }

    /// Drops the output buffer and what points into it.
    private func dropOutput() {
        output = nil
        outputBase = nil
        outputCapacity = 0
        outputUsed = 0
    }

    /// Hands the output buffer to the relay, if it holds anything.
    private func handOffOutput() {
        guard let output, outputUsed > 0 else { return }
        output.withUnsafeMutablePointerToHeader { $0.pointee = outputUsed }
        lastOutputSize = outputUsed
        dropOutput()
        commands.post(.write(relay, ByteBuffer(storage: output)))
    }

    func turnEnded() {
        isAskedForTurnEnd = false
        handOffOutput()
    }

    // MARK: Reading

    public func startReading() {
        loop.assertOnLoopThread()
        isReading = true
        while isReading, !heldInput.isEmpty {
            consume(heldInput.removeFirst())
        }
        if isReading, endOfInputHeld {
            endOfInputHeld = false
            inputEnded()
        }
    }

    public func stopReading() {
        loop.assertOnLoopThread()
        isReading = false
    }

    /// The relay's events (the first loop's thread).
    static func handle(_ event: RelayEvent) {
        switch event {
        case .read(let stream, let bytes): stream.received(bytes)
        case .endInput(let stream): stream.inputEnded()
        case .closed(let stream): stream.didClose()
        case .progress(let stream): stream.checkUnsentWaiter()
        case .acknowledged(let stream, let bytes):
            let waiters = stream.measureWaiters
            stream.measureWaiters = []
            for report in waiters { report(bytes) }
        }
    }

    private func received(_ bytes: InputSlice) {
        if isReading && heldInput.isEmpty {
            consume(bytes)
        } else {
            heldInput.append(bytes.owned())
        }
    }

    /// Hands `bytes` to the delegate while the stream is open, and gives the relay its credit
    /// back.
    private func consume(_ bytes: InputSlice) {
        if state == .open, let delegate { delegate.connection(self, didRead: bytes.bytes) }
        bytes.release()
        relay.unconsumed.subtract(bytes.count, ordering: .relaxed)
        if relay.isPausedForCredit.load(ordering: .relaxed) { commands.post(.returnCredit(relay)) }
    }

    private func inputEnded() {
        guard isReading, heldInput.isEmpty else {
            endOfInputHeld = true
            return
        }
        delegate?.connectionDidEndInput(self)
        if state == .open && configuration.drainsAtEndOfInput && !closePostponed {
            closeAfterFlush(timeout: configuration.lingerAfterEndOfInput)
        }
    }

    // MARK: Closing

    public func close() {
        guard loop.isOnLoopThread else {
            loop.execute { [self] in close() }
            return
        }
        guard state == .open || state == .draining else { return }
        state = .closing
        dropOutput()
        heldInput.removeAll()
        commands.post(.close(relay))
    }

    public func closeAfterFlush(timeout: Duration) {
        guard loop.isOnLoopThread else {
            loop.execute { [self] in closeAfterFlush(timeout: timeout) }
            return
        }
        guard state == .open else { return }
        state = .draining
        handOffOutput()
        commands.post(.closeAfterFlush(relay, timeout))
    }

    public func postponeCloseAtEndOfInput() { closePostponed = true }

    public func onClose(_ hook: @escaping @Sendable () -> Void) { hooks.add(hook) }

    private func didClose() {
        guard state != .closed else { return }
        state = .closed
        dropOutput()
        unsentWaiter = nil
        measureWaiters = []
        heldInput.removeAll()
        hooks.run()
        let delegate = self.delegate
        self.delegate = nil
        delegate?.connectionDidClose(self)
    }
}
