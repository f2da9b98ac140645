#include "textflag.h"

// func Write(addr uintptr)
TEXT ·Write(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	// PREFETCHW (AX), which the Go assembler does not name. CPUs without
	// it (before Broadwell) execute it as a no-op.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	RET

// func Read(addr uintptr)
TEXT ·Read(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET
