#include "textflag.h"

// func Write(addr uintptr)
TEXT ·Write(SB), NOSPLIT|NOFRAME, $0-8
	MOVD addr+0(FP), R0
	PRFM (R0), PSTL1KEEP
	RET

// func Read(addr uintptr)
TEXT ·Read(SB), NOSPLIT|NOFRAME, $0-8
	MOVD addr+0(FP), R0
	PRFM (R0), PLDL1KEEP
	RET
