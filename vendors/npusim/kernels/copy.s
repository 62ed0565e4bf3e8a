# Device copy: dst[i] = src[i] for i < n (4-byte elements), HBM -> SRAM -> HBM.
# A grid-stride loop over blocks of BLK elements: block b goes to program b % programs. Two SRAM
# slots: dma0 loads one while dma1 stores the other.
# Bindings: r1 src, r2 dst (HBM addresses), r3 n (elements), r4 programs (grid axis 0).
# Semaphores: s0 free slots, s1 loaded slots (both back at 0 at the end).
.equ BLK, 65536
        dma.cfgi esize, 4
        dma.cfgi n0, BLK
        dma.cfgi n1, 1
        dma.cfgi n2, 1
        sem.sig cp, s0, 2
        li r20, 0                # blocks this program has moved: slot = r20 & 1
        mov r5, r24              # block index
loop:   muli r6, r5, BLK         # its first element
        bge r6, r3, done
        sub r7, r3, r6
        dma.cfg v0, r7           # the tail block is cut at n
        andi r8, r20, 1
        muli r8, r8, BLK * 4     # slot
        shli r10, r6, 2
        add r11, r1, r10
        add r12, r2, r10
        sem.wait dma0, s0, 1
        dma.ld dma0, r8, r11
        sem.sig dma0, s1, 1
        sem.wait dma1, s1, 1
        dma.st dma1, r12, r8
        sem.sig dma1, s0, 1
        addi r20, r20, 1
        add r5, r5, r4
        jmp loop
done:   sem.wait cp, s0, 2       # every store has finished
        halt
