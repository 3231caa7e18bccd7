import RunnelBytes
import Synchronization

/// What a loop's relayed streams tell the first loop: bytes read, the end of input, the close,
/// progress in writing that a waiter asked for (`RelayedStream.whenUnsentBytes`), and what the
/// peer has acknowledged, when asked (`RelayedStream.measureAcknowledged`).
enum RelayEvent {
    case read(RelayedStream, InputSlice)
    case endInput(RelayedStream)
    case closed(RelayedStream)
    case progress(RelayedStream)
    case acknowledged(RelayedStream, UInt64)
}

/// What the first loop tells another loop's relays: take a socket, write, read again,
/// close.
enum RelayCommand {
    case open(StreamRelay, socket: Int32, configuration: TCPConnection.Configuration, filter: (any ConnectionFilter)?)
    case write(StreamRelay, ByteBuffer)
    case returnCredit(StreamRelay)
    case closeAfterFlush(StreamRelay, Duration)
    case close(StreamRelay)
    /// Tell the stream what the peer has acknowledged (`TCPConnection.acknowledgedBytes`).
    case measure(StreamRelay)
}

/// The far side of a `RelayedStream`: the socket's `TCPConnection` on another loop, whose
/// reads it sends to the stream's loop (in the turn's batch, a large read where it was read:
/// `RelayReadArena`) and whose output comes from there. It reads ahead at most `inputCredit`
/// bytes that the stream has not consumed yet, so a stream that stops reading stops the
/// socket's reading too, as `stopReading` would. It publishes what it has taken of the
/// stream's output (`taken`), what its connection has not handed to the kernel yet
/// (`backlog`) and what the kernel has taken (`sent`), which the stream reads to know its
/// unsent output and progress without a message per write.
///
/// Thread rules: `handle(_:)` and the connection's callbacks on the relay's own loop; the
/// atomics from either thread. Lifetime rule: its `RelayedStream` holds it for life; it holds
/// the stream (to name it in events) and is held by its connection (as delegate) until the
/// connection has closed, after which it lets both go.
final class StreamRelay: ByteStreamDelegate, @unchecked Sendable {
    /// Unconsumed input past which the socket is not read until the stream catches up.
    static let inputCredit = 256 * 1024

    private let events: CrossLoopMailbox<RelayEvent>
    /// The stream it serves, set before the relay's first command crosses; dropped at close.
    var stream: RelayedStream?
    private var connection: TCPConnection?

    /// Bytes the kernel has taken from the connection (`TCPConnection.sentBytes`).
    let sent = Atomic<UInt64>(0)
    /// Bytes of the stream's output the relay has taken (its `.write` commands).
    let taken = Atomic<UInt64>(0)
    /// The connection's `unsentBytes` after the last write it took or completed.
    let backlog = Atomic<Int>(0)
    /// Bytes read and sent to the stream that it has not consumed yet.
    let unconsumed = Atomic<Int>(0)
    /// Reading stopped because `unconsumed` passed `inputCredit`.
    let isPausedForCredit = Atomic<Bool>(false)
    /// The stream waits for progress in writing: the next confirmation sends `.progress`.
    let wantsProgress = Atomic<Bool>(false)

    init(events: CrossLoopMailbox<RelayEvent>) { self.events = events }

    /// Carries out one of the stream's commands (the relay's loop thread).
    static func handle(_ command: RelayCommand) {
        switch command {
        case .open(let relay, let socket, let configuration, let filter):
            relay.open(socket: socket, configuration: configuration, filter: filter)
        case .write(let relay, let buffer): relay.take(buffer)
        case .returnCredit(let relay): relay.resumeIfCredited()
        case .closeAfterFlush(let relay, let timeout): relay.connection?.closeAfterFlush(timeout: timeout)
        case .close(let relay): relay.connection?.close()
        case .measure(let relay):
            if let connection = relay.connection, let stream = relay.stream {
                relay.events.post(.acknowledged(stream, connection.acknowledgedBytes))
            }
        }
    }

    private func open(socket: Int32, configuration: TCPConnection.Configuration, filter: (any ConnectionFilter)?) {
        guard let stream else { return }
        let connection: TCPConnection
        do {
            connection = try TCPConnection.adopting(socket: socket, on: events.source, configuration: configuration)
        } catch {
            self.stream = nil
            events.post(.closed(stream))
            return
        }
        if let filter { connection.attach(filter: filter) }
        connection.readsIntoRelayArena = true
        connection.delegate = self
        connection.onOutputConfirmed = { [self] in outputConfirmed() }
        self.connection = connection
        connection.startReading()
    }

    /// Writes `buffer` and counts it: the backlog first, then what was taken (the order the
    /// stream reads them in reverse).
    private func take(_ buffer: ByteBuffer) {
        if let connection {
            connection.write(buffer)
            backlog.store(connection.unsentBytes, ordering: .sequentiallyConsistent)
        }
        taken.add(UInt64(buffer.count), ordering: .sequentiallyConsistent)
    }

    private func outputConfirmed() {
        guard let connection, let stream else { return }
        backlog.store(connection.unsentBytes, ordering: .sequentiallyConsistent)
        sent.store(connection.sentBytes, ordering: .sequentiallyConsistent)
        if wantsProgress.exchange(false, ordering: .sequentiallyConsistent) { events.post(.progress(stream)) }
    }

    private func resumeIfCredited() {
        guard isPausedForCredit.load(ordering: .relaxed), unconsumed.load(ordering: .relaxed) < Self.inputCredit
        else { return }
        isPausedForCredit.store(false, ordering: .relaxed)
        connection?.startReading()
    }

    // MARK: ByteStreamDelegate

    func connection(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard let stream else { return }
        let unconsumed = self.unconsumed.add(bytes.count, ordering: .relaxed).newValue
        events.post(.read(stream, events.source.io.relayArena.claim(bytes)))
        if unconsumed >= Self.inputCredit {
            isPausedForCredit.store(true, ordering: .relaxed)
            self.connection?.stopReading()
        }
    }

    func connectionDidEndInput(_ connection: any ByteStream) {
        if let stream { events.post(.endInput(stream)) }
    }

    func connectionDidClose(_ connection: any ByteStream) {
        if let stream { events.post(.closed(stream)) }
        stream = nil
        self.connection = nil
    }
}
