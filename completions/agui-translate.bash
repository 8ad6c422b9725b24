_agui__translate() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="agui__translate"
                ;;
            agui__translate,check)
                cmd="agui__translate__subcmd__check"
                ;;
            agui__translate,help)
                cmd="agui__translate__subcmd__help"
                ;;
            agui__translate,run)
                cmd="agui__translate__subcmd__run"
                ;;
            agui__translate,serve)
                cmd="agui__translate__subcmd__serve"
                ;;
            agui__translate__subcmd__help,check)
                cmd="agui__translate__subcmd__help__subcmd__check"
                ;;
            agui__translate__subcmd__help,help)
                cmd="agui__translate__subcmd__help__subcmd__help"
                ;;
            agui__translate__subcmd__help,run)
                cmd="agui__translate__subcmd__help__subcmd__run"
                ;;
            agui__translate__subcmd__help,serve)
                cmd="agui__translate__subcmd__help__subcmd__serve"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        agui__translate)
            opts="-f -q -j -h -V --from --thread-id --run-id --tool-names --agui-version --raw --no-user-messages --format --strict --quiet --stats --jobs --help --version run check serve help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -W "auto gemini codex claude codex-app-server qwen copilot opencode acp" -- "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -W "auto gemini codex claude codex-app-server qwen copilot opencode acp" -- "${cur}"))
                    return 0
                    ;;
                --thread-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-names)
                    COMPREPLY=($(compgen -W "native canonical" -- "${cur}"))
                    return 0
                    ;;
                --agui-version)
                    COMPREPLY=($(compgen -W "1.0 0.0" -- "${cur}"))
                    return 0
                    ;;
                --raw)
                    COMPREPLY=($(compgen -W "all unknown none" -- "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "ndjson sse" -- "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__check)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__help)
            opts="run check serve help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__help__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__help__subcmd__run)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__run)
            opts="-m -h --cli --model --effort --max-turns --cwd --resume --allow-tool --deny-tool --approval --transport --approval-timeout --start-timeout --page-tools --attach --tool-timeout --timeout --check --thread-id --run-id --tool-names --agui-version --raw --no-user-messages --format --help gemini codex claude qwen copilot opencode acp"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cli)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --effort)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-turns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cwd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resume)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-tool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --deny-tool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approval)
                    COMPREPLY=($(compgen -W "default auto-edit yolo ask" -- "${cur}"))
                    return 0
                    ;;
                --transport)
                    COMPREPLY=($(compgen -W "auto stream acp exec app-server" -- "${cur}"))
                    return 0
                    ;;
                --approval-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --start-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --page-tools)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attach)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --thread-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tool-names)
                    COMPREPLY=($(compgen -W "native canonical" -- "${cur}"))
                    return 0
                    ;;
                --agui-version)
                    COMPREPLY=($(compgen -W "1.0 0.0" -- "${cur}"))
                    return 0
                    ;;
                --raw)
                    COMPREPLY=($(compgen -W "all unknown none" -- "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "ndjson sse" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agui__translate__subcmd__serve)
            opts="-h --listen --token --token-file --no-token --allow-origin --allow-host --agui-version --raw --max-attachment --allow-fetch --rejoin-grace --keep-idle --state-dir --help gemini codex claude qwen copilot opencode acp"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-origin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --agui-version)
                    COMPREPLY=($(compgen -W "1.0 0.0" -- "${cur}"))
                    return 0
                    ;;
                --raw)
                    COMPREPLY=($(compgen -W "all unknown none" -- "${cur}"))
                    return 0
                    ;;
                --max-attachment)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-fetch)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rejoin-grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keep-idle)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _agui__translate -o nosort -o bashdefault -o default agui-translate
else
    complete -F _agui__translate -o bashdefault -o default agui-translate
fi
