import Testing

@testable import RunnelUV

extension RunnelUVTests {
    /// `RelayReadArena` without sockets: a read is written into `space` as libuv would, then
    /// claimed; what crosses in place, what is copied, and that a claimed slice keeps its bytes
    /// while later reads fill the arena.
    @Suite struct RelayReadArenaTests {
        /// Writes `count` bytes of `value` into the arena's space, as a read would; returns them.
        func read(_ count: Int, of value: UInt8, into arena: RelayReadArena) -> UnsafeRawBufferPointer {
            let space = arena.space
            precondition(count <= space.count)
            space.baseAddress!.initializeMemory(as: UInt8.self, repeating: value, count: count)
            return UnsafeRawBufferPointer(rebasing: space[0..<count])
        }

        @Test func aLargeReadCrossesWhereItWasRead() {
            let arena = RelayReadArena()
            let bytes = read(RelayReadArena.minimumSlice, of: 1, into: arena)
            let slice = arena.claim(bytes)
            #expect(slice.bytes.baseAddress == bytes.baseAddress)
            #expect(slice.count == bytes.count)
            // The next read goes after it, so the claimed bytes stay as they were.
            #expect(arena.space.baseAddress! >= UnsafeMutableRawPointer(mutating: bytes.baseAddress! + bytes.count))
            _ = read(arena.space.count, of: 2, into: arena)
            #expect(slice.bytes.allSatisfy { $0 == 1 })
        }

        @Test func aSmallReadIsCopiedAndItsSpaceOfferedAgain() {
            let arena = RelayReadArena()
            let before = arena.space
            let bytes = read(RelayReadArena.minimumSlice - 1, of: 3, into: arena)
            let slice = arena.claim(bytes)
            #expect(slice.bytes.baseAddress != bytes.baseAddress)
            #expect(Array(slice.bytes) == Array(bytes))
            #expect(arena.space.baseAddress == before.baseAddress && arena.space.count == before.count)
            _ = read(100, of: 4, into: arena)
            #expect(slice.bytes.allSatisfy { $0 == 3 })
        }

        /// Bytes that are not the arena's last read (a TLS filter's plaintext) are copied.
        @Test func bytesFromElsewhereAreCopied() {
            let arena = RelayReadArena()
            let elsewhere = [UInt8](repeating: 5, count: RelayReadArena.capacity)
            let slice = elsewhere.withUnsafeBytes { arena.claim($0) }
            #expect(slice.count == elsewhere.count)
            #expect(Array(slice.bytes) == elsewhere)
            #expect(arena.space.count == RelayReadArena.capacity)
        }

        /// A block whose tail falls below `minimumSlice` is replaced; slices of the old one
        /// keep it alive with their bytes.
        @Test func aFullBlockIsReplacedAndItsSlicesLive() {
            let arena = RelayReadArena()
            var slices: [(InputSlice, UInt8)] = []
            for value in UInt8(1)...8 {
                let count = max(RelayReadArena.minimumSlice, arena.space.count / 2)
                slices.append((arena.claim(read(min(count, arena.space.count), of: value, into: arena)), value))
                #expect(arena.space.count >= RelayReadArena.minimumSlice)
            }
            let first = slices[0].0.bytes.baseAddress!
            let inFirstBlock = slices.map { (0..<RelayReadArena.capacity).contains($0.0.bytes.baseAddress! - first) }
            #expect(inFirstBlock.contains(false))
            for (slice, value) in slices { #expect(slice.bytes.allSatisfy { $0 == value }) }
        }

        /// A slice to keep holds only its own bytes: a copy is itself, and a slice in place is
        /// copied and released, so its block is reused once full (four slices fill one).
        @Test func anOwnedSliceHoldsOnlyItsBytes() {
            let arena = RelayReadArena()
            let small = arena.claim(read(100, of: 7, into: arena))
            #expect(small.owned().bytes.baseAddress == small.bytes.baseAddress)
            let first = UnsafeRawPointer(arena.space.baseAddress!)
            var kept: [InputSlice] = []
            for value in UInt8(1)...8 {
                let slice = arena.claim(read(RelayReadArena.minimumSlice, of: value, into: arena))
                kept.append(slice.owned())
                #expect(kept.last!.bytes.baseAddress != slice.bytes.baseAddress)
            }
            #expect(UnsafeRawPointer(arena.space.baseAddress!) == first)
            for (index, slice) in kept.enumerated() { #expect(slice.bytes.allSatisfy { $0 == UInt8(index + 1) }) }
        }

        /// A retired block is reused once every slice of it is released, not before.
        @Test func aBlockIsReusedOnlyOnceItsSlicesAreReleased() {
            let arena = RelayReadArena()
            let first = arena.space.baseAddress!
            func fillBlock() -> [InputSlice] {
                var slices: [InputSlice] = []
                repeat {
                    slices.append(arena.claim(read(RelayReadArena.minimumSlice, of: 6, into: arena)))
                } while arena.space.count == RelayReadArena.capacity - slices.count * RelayReadArena.minimumSlice
                return slices
            }
            let held = fillBlock()
            #expect(arena.space.baseAddress != first)
            // The first block is retired with its slices held: the next block is a new one.
            let second = fillBlock()
            #expect(arena.space.baseAddress != first)
            for slice in second { slice.release() }
            for slice in held { slice.release() }
            _ = fillBlock()
            let reused = [UnsafeRawPointer(first), second[0].bytes.baseAddress!]
            #expect(reused.contains(UnsafeRawPointer(arena.space.baseAddress!)))
        }
    }
}
