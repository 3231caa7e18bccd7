import CLibUV
import RunnelBytes

/// A connection's output from the moment a writer hands it over until the kernel has it: the
/// bookkeeping only, no socket. Copies go into the open chunk's run `sealed..<used`; a run is
/// sealed into `segments` (with the object that owns its bytes, at the same index) when a
/// buffer is queued by reference or a flush starts; `startWrite` moves the segments into a
/// write request, whose bytes are in flight until `completeWrite`.
///
/// Invariants (`checkInvariants()`, asserted after every change in debug builds):
/// `pendingBytes` equals the open run plus `segmentBytes` plus `inFlightBytes`;
/// `segmentBytes` is the sum of the segments' lengths; every segment has one owner; the open
/// chunk's `sealed <= used <= capacity`.
///
/// Thread rules: the owning connection's loop thread only. Lifetime rule: a value owned by one
/// connection; the chunks and buffers it points into stay alive through `segmentOwners` and
/// each in-flight request's `owners` until that write completes.
@usableFromInline
struct WriteQueue {
    /// The chunk small writes are copied into, while it has room.
    var chunk: WriteChunk?
    /// Bytes accepted by a write and not yet confirmed handed to the kernel: the open run,
    /// the segments and the writes in flight.
    @usableFromInline var pendingBytes = 0
    /// Sealed runs waiting for the next write, as libuv takes them.
    private(set) var segments: [uv_buf_t] = []
    /// The owner of each segment's bytes (a chunk or a `ByteBuffer`'s storage), same index.
    private(set) var segmentOwners: [AnyObject] = []
    /// The sum of the segments' lengths.
    private(set) var segmentBytes = 0
    /// Bytes handed to write requests whose completion has not come back.
    private(set) var inFlightBytes = 0
    /// Bytes of the writes that have ended (taken by the kernel, or failed as the connection
    /// closed) since the queue began: with what libuv has written of the writes in flight,
    /// how far the peer has read (`TCPConnection.sentBytes`).
    private(set) var finishedBytes: UInt64 = 0
    /// Completed requests kept for reuse.
    private(set) var spareRequests: [WriteRequest] = []

    static let maxSpareRequests = 4

    init() {}

    /// Bytes copied into the open chunk and not sealed yet.
    var openBytes: Int { chunk.map { $0.used &- $0.sealed } ?? 0 }

    /// Bytes queued here, not yet in a write: the open run and the segments.
    var queuedBytes: Int { segmentBytes &+ openBytes }

    var isEmpty: Bool { segments.isEmpty && openBytes == 0 }

    // MARK: Appending

    /// Copies the pieces back to back into the open chunk, then a `\n` when `lineEnd`, if they
    /// fit; false (nothing copied) when there is no open chunk or not room enough. The body of
    /// every delivery, so it is inlined into its callers.
    @inline(__always)
    mutating func appendInOpenChunk(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        _ fourth: UnsafeRawBufferPointer, lineEnd: Bool
    ) -> Bool {
        let total = first.count &+ second.count &+ third.count &+ fourth.count &+ (lineEnd ? 1 : 0)
        guard let chunk, chunk.capacity &- chunk.used >= total else { return false }
        var target = chunk.base + chunk.used
        if first.count > 0 {
            target.copyMemory(from: first.baseAddress!, byteCount: first.count)
            target += first.count
        }
        if second.count > 0 {
            target.copyMemory(from: second.baseAddress!, byteCount: second.count)
            target += second.count
        }
        if third.count > 0 {
            target.copyMemory(from: third.baseAddress!, byteCount: third.count)
            target += third.count
        }
        if fourth.count > 0 { target.copyMemory(from: fourth.baseAddress!, byteCount: fourth.count) }
        if lineEnd { chunk.base.storeBytes(of: 10, toByteOffset: chunk.used &+ total &- 1, as: UInt8.self) }
        chunk.used &+= total
        pendingBytes &+= total
        return true
    }

    /// Copies `bytes`, across as many chunks from `pool` as it takes.
    mutating func append(_ bytes: UnsafeRawBufferPointer, from pool: WriteChunkPool) {
        pendingBytes += bytes.count
        var rest = bytes
        while !rest.isEmpty {
            if chunk == nil || chunk!.available == 0 {
                seal()
                chunk = pool.take(minimumCapacity: rest.count)
            }
            let copied = chunk!.append(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[copied...])
        }
        checkInvariants()
    }

    /// Fills chunks from `pool` with what `produce` writes into the room it is given (returning
    /// how many bytes it wrote, 0 when it has nothing more); the filter's output. Seals the
    /// last run.
    mutating func append(from pool: WriteChunkPool, _ produce: (UnsafeMutableRawBufferPointer) -> Int) {
        while true {
            if chunk == nil || chunk!.available == 0 {
                seal()
                chunk = pool.take(minimumCapacity: 0)
            }
            let target = chunk!
            let count = produce(
                UnsafeMutableRawBufferPointer(start: target.base + target.used, count: target.available))
            guard count > 0 else { break }
            target.used += count
            pendingBytes += count
        }
        seal()
        checkInvariants()
    }

    /// Queues `buffer`'s bytes by reference, after what is queued already; `owner` keeps them
    /// alive until written.
    mutating func append(reference bytes: UnsafeRawBufferPointer, owner: AnyObject) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        seal()
        segments.append(
            uv_buf_t(
                base: UnsafeMutableRawPointer(mutating: base).assumingMemoryBound(to: CChar.self), len: bytes.count))
        segmentOwners.append(owner)
        segmentBytes += bytes.count
        pendingBytes += bytes.count
        checkInvariants()
    }

    /// Turns the open run into a segment. A full chunk is let go (its segments own it).
    mutating func seal() {
        guard let chunk else { return }
        if chunk.used > chunk.sealed {
            let count = chunk.used - chunk.sealed
            segments.append(
                uv_buf_t(base: (chunk.base + chunk.sealed).assumingMemoryBound(to: CChar.self), len: count))
            segmentOwners.append(chunk)
            segmentBytes += count
            chunk.sealed = chunk.used
        }
        if chunk.available == 0 { self.chunk = nil }
    }

    // MARK: Writing

    /// Calls `body` with the segments, as libuv takes them (valid during the call); nil when
    /// there are none.
    func withSegments<Result>(_ body: (UnsafeBufferPointer<uv_buf_t>) -> Result) -> Result? {
        guard !segments.isEmpty else { return nil }
        return segments.withUnsafeBufferPointer(body)
    }

    /// The first `byteCount` bytes of the segments reached the kernel at once (`uv_try_write`):
    /// they leave the queue, whole segments and the front of a cut one, their chunks going
    /// back to `pool`.
    mutating func dropWritten(_ byteCount: Int, pool: WriteChunkPool) {
        precondition(byteCount > 0 && byteCount <= segmentBytes)
        if byteCount == segmentBytes {
            segments.removeAll(keepingCapacity: true)
            Self.recycleChunks(of: &segmentOwners, count: segmentOwners.count, to: pool)
            segmentOwners.removeAll(keepingCapacity: true)
        } else {
            var rest = byteCount
            var whole = 0
            while rest >= segments[whole].len {
                rest -= segments[whole].len
                whole += 1
            }
            segments.removeFirst(whole)
            Self.recycleChunks(of: &segmentOwners, count: whole, to: pool)
            segmentOwners.removeFirst(whole)
            segments[0].base += rest
            segments[0].len -= rest
        }
        segmentBytes -= byteCount
        pendingBytes -= byteCount
        finishedBytes &+= UInt64(byteCount)
        checkInvariants()
    }

    /// Moves the segments into a write request (a spare one when there is), whose bytes are in
    /// flight from now on; `submit` gets the request and the buffers to write (valid during
    /// the call). Nothing when no segment is queued.
    mutating func startWrite(_ submit: (WriteRequest, UnsafeBufferPointer<uv_buf_t>) -> Void) {
        guard !segments.isEmpty else { return }
        let request = spareRequests.popLast() ?? WriteRequest()
        request.byteCount = segmentBytes
        swap(&request.owners, &segmentOwners)
        inFlightBytes += segmentBytes
        segments.withUnsafeBufferPointer { submit(request, $0) }
        segments.removeAll(keepingCapacity: true)
        segmentBytes = 0
        checkInvariants()
    }

    /// A write request came back (done or failed: either way its bytes leave the queue); it is
    /// kept for reuse when `keepsSpare`. Its chunks go back to `pool`, and so does the idle
    /// chunk once nothing is pending, rather than pin one per connection.
    mutating func completeWrite(_ request: WriteRequest, keepsSpare: Bool, pool: WriteChunkPool) {
        Self.recycleChunks(of: &request.owners, count: request.owners.count, to: pool)
        request.owners.removeAll(keepingCapacity: true)
        inFlightBytes -= request.byteCount
        pendingBytes -= request.byteCount
        finishedBytes &+= UInt64(request.byteCount)
        if keepsSpare && spareRequests.count < Self.maxSpareRequests { spareRequests.append(request) }
        recycleIdleChunk(to: pool)
        checkInvariants()
    }

    /// The queued segments went into the filter (sealed into records): they leave the queue,
    /// their chunks going back to `pool`.
    mutating func removeSegments(pool: WriteChunkPool) {
        pendingBytes -= segmentBytes
        segments.removeAll(keepingCapacity: true)
        Self.recycleChunks(of: &segmentOwners, count: segmentOwners.count, to: pool)
        segmentOwners.removeAll(keepingCapacity: true)
        segmentBytes = 0
        checkInvariants()
    }

    /// Segments taken out of the queue for a while (`setSegmentsAside`).
    struct HeldSegments {
        fileprivate var segments: [uv_buf_t]
        fileprivate var owners: [AnyObject]
        fileprivate var byteCount: Int
    }

    /// Takes the segments out of the queue (and out of `pendingBytes`), so that others can be
    /// written before them; `putBack` returns them.
    mutating func setSegmentsAside() -> HeldSegments {
        var held = HeldSegments(segments: [], owners: [], byteCount: segmentBytes)
        swap(&held.segments, &segments)
        swap(&held.owners, &segmentOwners)
        segmentBytes = 0
        pendingBytes -= held.byteCount
        checkInvariants()
        return held
    }

    /// Returns segments set aside, ahead of any queued since.
    mutating func putBack(_ held: HeldSegments) {
        segments.insert(contentsOf: held.segments, at: 0)
        segmentOwners.insert(contentsOf: held.owners, at: 0)
        segmentBytes += held.byteCount
        pendingBytes += held.byteCount
        checkInvariants()
    }

    /// The chunks among the first `count` owners that nothing else points into (not the open
    /// chunk, no other segment or write) go back to `pool`, before the owners let go of them:
    /// a connection that writes all the time then takes its chunks from the pool, not from
    /// malloc (bench/README.md, "The third pass").
    private static func recycleChunks(of owners: inout [AnyObject], count: Int, to pool: WriteChunkPool) {
        for index in 0..<count where type(of: owners[index]) == WriteChunk.self {
            var chunk = unsafeDowncast(owners[index], to: WriteChunk.self)
            // The owner's place holds the pool until the caller drops it: `chunk` is then the
            // only reference, unless something else points into the chunk.
            owners[index] = pool
            if isKnownUniquelyReferenced(&chunk) { pool.recycle(chunk) }
        }
    }

    /// With nothing pending, the open chunk goes back to `pool` when no write points into it.
    mutating func recycleIdleChunk(to pool: WriteChunkPool) {
        if pendingBytes == 0, chunk != nil, isKnownUniquelyReferenced(&chunk!) {
            pool.recycle(chunk!)
            chunk = nil
        }
    }

    /// Drops everything (the connection closed; libuv has called back every write).
    mutating func removeAll() {
        segments.removeAll()
        segmentOwners.removeAll()
        spareRequests.removeAll()
        segmentBytes = 0
        inFlightBytes = 0
        chunk = nil
        pendingBytes = 0
    }

    // MARK: Invariants

    /// Asserts the invariants of the type's comment (debug builds only).
    @inline(__always)
    func checkInvariants() {
        assert(invariantsHold, "write queue out of balance")
    }

    /// Whether the invariants hold.
    var invariantsHold: Bool {
        if let chunk, !(chunk.sealed <= chunk.used && chunk.used <= chunk.capacity) {
            return false
        }
        return segments.count == segmentOwners.count && segments.reduce(0, { $0 + $1.len }) == segmentBytes
            && segmentBytes >= 0 && inFlightBytes >= 0 && pendingBytes == openBytes + segmentBytes + inFlightBytes
    }
}

/// The loop's spare write chunks, shared by its connections so an idle one pins none.
///
/// Thread rules: the loop thread only. Lifetime rule: owned by the loop's `LoopIO` (or a test);
/// a chunk taken is the taker's until given back with `recycle`.
final class WriteChunkPool {
    /// The size of the chunks small writes are copied into.
    static let chunkSize = 64 * 1024
    static let maxSpares = 64

    private var spares: [WriteChunk] = []

    init() {}

    var spareCount: Int { spares.count }

    /// A chunk of at least `minimumCapacity` bytes, reused when one is spare.
    func take(minimumCapacity: Int) -> WriteChunk {
        if minimumCapacity <= Self.chunkSize, let chunk = spares.popLast() { return chunk }
        return WriteChunk(capacity: max(Self.chunkSize, minimumCapacity))
    }

    /// Takes back a chunk no write points into any more.
    func recycle(_ chunk: WriteChunk) {
        guard chunk.capacity == Self.chunkSize, spares.count < Self.maxSpares else { return }
        chunk.used = 0
        chunk.sealed = 0
        spares.append(chunk)
    }
}
