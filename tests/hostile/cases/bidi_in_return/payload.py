# validate_args returns a reason with a right-to-left override: shown reversed, FAIL reads as PASS.
return "\u202eLIAF\u202c"
