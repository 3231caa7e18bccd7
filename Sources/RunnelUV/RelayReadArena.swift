import RunnelBytes
import Synchronization

/// Where a loop's relayed connections read into, so that a large read crosses to the first
/// loop where it lies instead of as a copy: a block of `capacity` bytes whose unused tail each
/// read is offered (`space`); a read the relay passes on whole and that fills at least
/// `minimumSlice` is claimed in place (`claim`), and the next read goes after it. A smaller
/// read, or bytes that are not the block's (a TLS filter's plaintext), are copied into a
/// buffer of their own size, so a short read never holds a whole block.
///
/// A block whose tail is shorter than `minimumSlice` is retired, and the next is a retired
/// block all of whose slices were released (`InputSlice.release()`), else a new one: reusing
/// blocks keeps their pages mapped, where the allocator would hand a freed block back to the
/// kernel and a fresh one fault its pages in again.
///
/// Thread rules: the loop thread of the loop it belongs to (`LoopIO.relayArena`); the slices it
/// hands out may be read and released from any thread, and nothing writes their bytes until
/// every slice of the block is released. Lifetime rule: made by its `LoopIO` on first use and
/// owned by it; a block lives while the arena or a slice holds it.
final class RelayReadArena {
    /// As large as the loop's read buffer, so a relayed socket is read in as few calls.
    static let capacity = 256 * 1024
    /// The least a read must hold to be claimed in place, and the least tail a block keeps
    /// offering (a connection's read budget for a turn): a claimed slice holds at most four
    /// times its size in memory.
    static let minimumSlice = capacity / 4
    /// Retired blocks kept for reuse.
    static let retiredLimit = 4

    private var block = ArenaBlock()
    /// Bytes at the block's start that belong to claimed slices (rounded up to 16, so no two
    /// slices share a word that two threads touch).
    private var used = 0
    /// Blocks filled before the current one, oldest first; reused once all their slices are
    /// released.
    private var retired: [ArenaBlock] = []

    /// Where the next read goes: the block's unused tail.
    var space: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: block.base + used, count: Self.capacity - used)
    }

    /// `bytes` as a slice that outlives the read: in place when they are the last read into
    /// `space` and hold at least `minimumSlice`, else copied.
    func claim(_ bytes: UnsafeRawBufferPointer) -> InputSlice {
        guard bytes.count >= Self.minimumSlice, let start = bytes.baseAddress,
            start == UnsafeRawPointer(block.base + used)
        else { return InputSlice(copying: bytes) }
        block.outstanding.add(1, ordering: .relaxed)
        let slice = InputSlice(block: block, start: start, count: bytes.count)
        used += (bytes.count + 15) & ~15
        if Self.capacity - used < Self.minimumSlice { replaceBlock() }
        return slice
    }

    private func replaceBlock() {
        retired.append(block)
        used = 0
        if let free = retired.firstIndex(where: { $0.outstanding.load(ordering: .acquiring) == 0 }) {
            block = retired.remove(at: free)
        } else {
            block = ArenaBlock()
        }
        if retired.count > Self.retiredLimit { retired.removeFirst() }
    }
}

/// One block of a `RelayReadArena`, and how many of its slices are not released yet.
///
/// Thread rules: `outstanding` from any thread; the bytes as `RelayReadArena` says. Lifetime
/// rule: held by its arena and its slices; frees its bytes when the last lets go.
final class ArenaBlock: @unchecked Sendable {
    let base = UnsafeMutableRawPointer.allocate(byteCount: RelayReadArena.capacity, alignment: 16)
    let outstanding = Atomic<Int>(0)

    deinit { base.deallocate() }
}

/// Input bytes that crossed from another loop: a run of a `RelayReadArena` block they were
/// read into, or a copy of their own.
///
/// Thread rules: immutable, readable from any thread. Lifetime rule: holds its block; the
/// first loop calls `release()` once it has consumed the bytes, after which the arena may
/// reuse them (a slice dropped unreleased only keeps its block from being reused).
struct InputSlice: @unchecked Sendable {
    private let block: ArenaBlock?
    private let copy: ByteBuffer?
    private let start: UnsafeRawPointer
    let count: Int

    init(block: ArenaBlock, start: UnsafeRawPointer, count: Int) {
        self.block = block
        self.copy = nil
        self.start = start
        self.count = count
    }

    /// A slice holding a copy of `bytes` in a buffer of their size.
    init(copying bytes: UnsafeRawBufferPointer) {
        let copy = ByteBuffer(copying: bytes)
        self.block = nil
        self.copy = copy
        self.start = copy.storage.withUnsafeMutablePointerToElements { UnsafeRawPointer($0) }
        self.count = bytes.count
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: start, count: count) }

    /// This slice as one that holds only its own bytes, to be kept a while: itself when it is a
    /// copy already, else a copy, this slice being released.
    func owned() -> InputSlice {
        guard block != nil else { return self }
        defer { release() }
        return InputSlice(copying: bytes)
    }

    /// The bytes are consumed: their block may be written again once all its slices say so.
    /// Once per slice, after the last read of its bytes.
    func release() { block?.outstanding.subtract(1, ordering: .releasing) }
}
