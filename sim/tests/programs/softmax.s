# Row softmax of an M x N f32 matrix, y = exp(x - max) / sum(exp(x - max)) per row, on one core.
# X and Y are HBM addresses (rows N * 4 bytes apart); TR rows per tile; N * 4 * TR * 2 + TR * 4
# bytes of SRAM. Defines: M, N, X, Y, TR.
# SPDX-License-Identifier: Apache-2.0
.equ RB, N * 4                  # bytes per row
.equ T, 0                       # the tile: TR x N at SRAM 0
.equ E, TR * RB                 # a row value broadcast along its row: TR x N
.equ S, 2 * TR * RB             # one f32 per row: its max, then its sum
    dma.cfgi esize, 4
    dma.cfgi n0, N
    dma.cfgi hs1, RB
    dma.cfgi ls1, RB
    v.cfgi n, N
    v.cfgi sb, RB
    v.cfgi ed, 4
    li r1, X
    li r2, Y
    li r3, M                    # rows left
    li r10, T
    li r11, E
    li r12, S
tile:
    li r4, TR
    min r4, r4, r3              # rows in this tile
    dma.cfg n1, r4
    dma.ld dma0, r10, r1
    sem.sig dma0, s0, 1
    sem.wait vec, s0, 1         # the vector unit starts when the tile is in
    v.cfg rows, r4
    v.cfgi sa, RB
    v.cfgi sd, 4
    v.rmax r12, r10             # S[r] = max of row r
    v.cfgi sa, 4                # E[r][i] = S[r]: a strided copy with element stride 0
    v.cfgi ea, 0
    v.cfgi sd, RB
    v.scopy r11, r12
    v.cfgi sa, RB
    v.sub r10, r10, r11
    v.exp r10, r10
    v.cfgi sd, 4
    v.rsum r12, r10             # S[r] = sum of row r
    v.cfgi sa, 4
    v.cfgi sd, RB
    v.scopy r11, r12
    v.cfgi sa, RB
    v.div r10, r10, r11
    sem.sig vec, s1, 1
    sem.wait dma1, s1, 1
    dma.st dma1, r2, r10
    fence                       # the tile's buffers are reused by the next one
    muli r5, r4, RB
    add r1, r1, r5
    add r2, r2, r5
    sub r3, r3, r4
    blt r0, r3, tile
    halt
